/*
 * mem_errors.c - leakgate test program: Memcheck error kinds (not leaks).
 *
 * Build: gcc -g -O0 -o mem_errors mem_errors.c
 * Each faulty line carries a trailing marker comment (an `@` followed by a
 * name, each appearing exactly once); see tests/programs/README.md.
 * Expected errors: InvalidRead, InvalidWrite, UninitCondition, InvalidFree.
 * Everything allocated is freed, so there are no leaks. Exit code under
 * Valgrind: 0. Run natively it aborts (glibc notices the heap corruption /
 * double free), so it is only meant to be run under Valgrind.
 */
#include <stdio.h>
#include <stdlib.h>

volatile int g_sink;

__attribute__((noinline)) void invalid_read(void)
{
    int *a = malloc(10 * sizeof(int)); /* 40 bytes */
    for (int i = 0; i < 10; i++)
        a[i] = i;
    g_sink = a[10]; /* @invalid_read */
    free(a);
}

__attribute__((noinline)) void invalid_write(void)
{
    int *a = malloc(10 * sizeof(int));
    a[10] = 42; /* @invalid_write */
    free(a);
}

__attribute__((noinline)) void uninit_cond(void)
{
    int *x = malloc(sizeof(int)); /* never initialised */
    if (*x > 10) /* @uninit_cond */
        g_sink = 1;
    else
        g_sink = 2;
    free(x);
}

__attribute__((noinline)) void invalid_free(void)
{
    char *p = malloc(16);
    free(p);
    free(p); /* @invalid_free */
}

int main(void)
{
    invalid_read();
    invalid_write();
    uninit_cond();
    invalid_free();
    return 0;
}
