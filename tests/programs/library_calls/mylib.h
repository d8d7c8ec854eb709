/* mylib.h - leakgate test program: the API of a small "third-party" library. */
#ifndef MYLIB_H
#define MYLIB_H
#include <stddef.h>

struct mylib_buf {
    size_t len;
    char *data;
};

/* A new buffer of n bytes (two blocks: the struct and its data); the
 * caller owns it and releases it with mylib_buf_free(). */
struct mylib_buf *mylib_buf_new(size_t n);
void mylib_buf_free(struct mylib_buf *b);

#endif
