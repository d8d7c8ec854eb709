/*
 * baseline.c - leakgate test program for baselines (tests/it/ci_gate.rs).
 *
 * Build: gcc -g -O0 -o baseline baseline.c
 * Two definite leaks, marked keep_a in leak_a (40 bytes) and keep_b in
 * leak_b (56 bytes). The test derives edited copies from this file: lines
 * inserted at the shift_here comment move both leaks down, a third leak
 * replaces the third_here comment (in leak_b, above keep_b: same function,
 * same fingerprint, another site), and removing the call_a line removes
 * leak_a's leak. Exit code: 0.
 */
#include <stdlib.h>
#include <string.h>

/* Volatile sink used to scrub stale pointers from the stack. */
volatile char g_sink;

/* @shift_here */

__attribute__((noinline)) void leak_a(void)
{
    char *p = malloc(40); /* @keep_a */
    p[0] = 'a';
    p = NULL;
}

__attribute__((noinline)) void leak_b(void)
{
    /* @third_here */
    char *q = malloc(56); /* @keep_b */
    q[0] = 'b';
    q = NULL;
}

/* Overwrite the stack area the leak functions used so that no stale copy
 * of a leaked pointer survives to the leak check. */
__attribute__((noinline)) void scrub_stack(void)
{
    volatile char buf[4096];
    memset((char *)buf, 0, sizeof buf);
    g_sink = buf[100];
}

__attribute__((noinline)) void run_all(void)
{
    leak_a(); /* @call_a */
    leak_b();
}

int main(void)
{
    run_all();
    scrub_stack();
    return 0;
}
