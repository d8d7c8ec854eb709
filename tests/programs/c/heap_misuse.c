/*
 * heap_misuse.c - leakgate test program: memory errors whose story is in
 * Valgrind's other stacks (where the block was freed, where it was
 * allocated).
 *
 * Build: gcc -g -O0 -o heap_misuse heap_misuse.c
 * Each line of interest carries a trailing marker comment (an `@` followed
 * by a name, each appearing exactly once); see tests/programs/README.md.
 * Expected errors: InvalidRead (a use after free: freed in release(),
 * allocated in make()), InvalidRead (0 bytes after a block of size 8),
 * InvalidFree (a double free). Everything allocated is freed, so there are
 * no leaks. Exit code under Valgrind: 0. Run natively it may abort (glibc
 * notices the double free), so it is only meant to be run under Valgrind.
 */
#include <stdlib.h>

volatile int g_sink;

__attribute__((noinline)) int *make(void)
{
    return malloc(4 * sizeof(int)); /* @uaf_alloc */
}

__attribute__((noinline)) void release(int *p)
{
    free(p); /* @uaf_free */
}

__attribute__((noinline)) void use_after_free(void)
{
    int *p = make();
    p[0] = 1;
    release(p);
    g_sink = p[0]; /* @uaf_read */
}

__attribute__((noinline)) void overflow(void)
{
    char *b = malloc(8); /* @overflow_alloc */
    g_sink = b[8]; /* @overflow_read */
    free(b);
}

__attribute__((noinline)) void double_free(void)
{
    char *p = malloc(16); /* @df_alloc */
    free(p); /* @df_free */
    free(p); /* @df_again */
}

int main(void)
{
    use_after_free();
    overflow();
    double_free();
    return 0;
}
