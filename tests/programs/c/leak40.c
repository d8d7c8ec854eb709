/*
 * leak40.c - leakgate test program: leaks 40 bytes and frees everything else,
 * so the still-reachable byte count at exit is 0 (Valgrind 3.26.0 then leaves
 * <still_reachable> in <leak_summary> unclosed: upstream bug 514613).
 *
 * Build: gcc -g -O0 -o leak40 leak40.c
 * Expected under Memcheck: 40 bytes in 1 block definitely lost. Exit code: 0.
 */
#include <stdlib.h>
#include <string.h>

static void *keep_nothing(void)
{
    char *p = malloc(40); /* @leak40 */
    memset(p, 1, 40);
    return p;
}

int main(void)
{
    char *q = malloc(100);
    memset(q, 0, 100);
    free(q);
    keep_nothing();
    return 0;
}
