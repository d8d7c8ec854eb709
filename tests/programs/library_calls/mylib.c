/*
 * mylib.c - leakgate test program: a small "third-party" shared library
 * whose API returns objects the caller owns (mylib_buf_new).
 *
 * Build: gcc -g -O0 -shared -fPIC -o libmylib.so mylib.c   (the test puts
 * it under a site-packages directory, so it classifies as third_party).
 */
#include <stdlib.h>
#include <string.h>

#include "mylib.h"

__attribute__((noinline)) static char *mylib_alloc_data(size_t n)
{
    return calloc(n, 1);
}

__attribute__((noinline)) struct mylib_buf *mylib_buf_new(size_t n)
{
    struct mylib_buf *b = malloc(sizeof *b);
    b->len = n;
    b->data = mylib_alloc_data(n);
    return b;
}

__attribute__((noinline)) void mylib_buf_free(struct mylib_buf *b)
{
    free(b->data);
    free(b);
}
