/*
 * leak_kinds.c - leakgate test program: one leak of every Memcheck leak kind.
 *
 * Build: gcc -g -O0 -o leak_kinds leak_kinds.c
 * Each leaking allocation line carries a trailing marker comment (an `@`
 * followed by a name); the integration tests look the marker up to find the
 * expected line number, so each marker appears exactly once in this file.
 * See tests/programs/README.md for the expected Valgrind kind per marker.
 * Exit code: 0.
 */
#include <stdlib.h>
#include <string.h>

struct node {
    long tag;
    char *payload;
};

/* Globals keep the "possible" and "reachable" blocks alive at exit. */
char *g_interior;   /* interior pointer only -> possibly lost */
char *g_reachable;  /* start pointer -> still reachable */

/* Volatile sink used to scrub stale pointers from the stack. */
volatile char g_sink;

__attribute__((noinline)) void leak_definite(void)
{
    char *p = malloc(64); /* @definite */
    p[0] = 'd';
    p = NULL;
}

__attribute__((noinline)) void leak_indirect(void)
{
    struct node *n = malloc(sizeof *n); /* @indirect_outer */
    n->tag = 1;
    n->payload = malloc(32); /* @indirect_inner */
    n->payload[0] = 'i';
    n = NULL;
}

__attribute__((noinline)) void leak_possible(void)
{
    char *p = malloc(48); /* @possible */
    g_interior = p + 8;
    p = NULL;
}

__attribute__((noinline)) void leak_reachable(void)
{
    g_reachable = malloc(24); /* @reachable */
    g_reachable[0] = 'r';
}

__attribute__((noinline)) void leak_loop(void)
{
    for (int i = 0; i < 5; i++) {
        char *p = malloc(16); /* @loop */
        p[0] = (char)i;
        p = NULL;
    }
}

__attribute__((noinline)) void leak_strdup(void)
{
    char *s = strdup("leakgate strdup leak"); /* @strdup */
    s[0] = 'L';
    s = NULL;
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
    leak_definite();
    leak_indirect();
    leak_possible();
    leak_reachable();
    leak_loop();
    leak_strdup();
}

int main(void)
{
    run_all();
    scrub_stack();
    return 0;
}
