/*
 * uselib.c - leakgate test program: calls mylib's API and (without the
 * argument "fixed") never releases what it returns.
 *
 * Build: gcc -g -O0 -o uselib uselib.c -L<dir> -lmylib -Wl,-rpath,<dir>
 *   use_buffer()  mylib_buf_new(32) never freed, 3 calls -> definitely lost
 *                 (3 x 16 bytes, the struct) and indirectly lost (3 x 32
 *                 bytes, its data), both allocated by mylib
 */
#include <string.h>

#include "mylib.h"

volatile char g_sink;

__attribute__((noinline)) void use_buffer(int fixed)
{
    struct mylib_buf *b = mylib_buf_new(32); /* @lib_call */
    b->data[0] = 'x';
    g_sink = b->data[0];
    if (fixed)
        mylib_buf_free(b);
    b = NULL;
}

__attribute__((noinline)) void scrub_stack(void)
{
    volatile char buf[4096];
    memset((char *)buf, 0, sizeof buf);
    g_sink = buf[100];
}

int main(int argc, char **argv)
{
    int fixed = argc > 1 && strcmp(argv[1], "fixed") == 0;
    for (int i = 0; i < 3; i++)
        use_buffer(fixed);
    scrub_stack();
    return 0;
}
