/*
 * checkpoints.c - leakgate test program: a C "service" that handles five
 * requests and takes a checkpoint after each through leakgate_probe.h.
 * Every request leaks 24 bytes (definitely lost); the first one also fills
 * a cache that stays reachable.
 *
 * Build: gcc -g -O0 -I python/leakgate_probe checkpoints.c
 */
#include <stdlib.h>
#include <string.h>

#include "leakgate_probe.h"

static char *g_cache;
static volatile char g_sink;

static __attribute__((noinline)) void handle(int i)
{
    char *p = malloc(24); /* @c_request_leak */
    memset(p, 'q', 24);
    g_sink = p[i % 24];
    if (g_cache == NULL) {
        g_cache = malloc(100); /* @c_cache */
        memset(g_cache, 'c', 100);
    }
}

/* Overwrites stack left over from handle(), so no stale pointer keeps a
 * lost block reachable. */
static __attribute__((noinline)) void scrub_stack(void)
{
    volatile char buf[4096];
    memset((char *)buf, 0, sizeof buf);
}

int main(void)
{
    char label[32];
    leakgate_checkpoint_kind("start", "start");
    for (int i = 1; i <= 5; i++) {
        handle(i);
        scrub_stack();
        strcpy(label, "request ");
        label[8] = (char)('0' + i);
        label[9] = 0;
        leakgate_checkpoint(label);
    }
    return 0;
}
