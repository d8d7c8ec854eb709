/*
 * mempool.c - leakgate test program and the example of docs/mempools.md: a
 * tiny object pool in mmap'd memory (bump allocation, a free list), made
 * visible to Memcheck with its client requests.
 *
 * Build: gcc -g -O0 -o mempool mempool.c         (a Memcheck mempool)
 *        gcc -g -O0 -DMALLOCLIKE ...              (malloc-like blocks)
 *        gcc -g -O0 -DNO_VALGRIND_REQUESTS ...    (no requests: leaks invisible)
 * The requests need Valgrind's headers (valgrind/memcheck.h, Debian's
 * `valgrind` package); natively they cost a few instructions and do nothing.
 *
 * main() makes 8 pool objects and frees them, then makes one more and
 * loses it (the line marked pool_leak calls pool_alloc, whose request on
 * the line marked pool_request records the allocation stack). Memcheck sees
 * no malloc for it: without the requests it reports no leak at all.
 * Exit code: 0.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#ifdef NO_VALGRIND_REQUESTS
#define VALGRIND_CREATE_MEMPOOL(pool, rz, zeroed) ((void)0)
#define VALGRIND_MEMPOOL_ALLOC(pool, addr, size) ((void)0)
#define VALGRIND_MEMPOOL_FREE(pool, addr) ((void)0)
#define VALGRIND_MALLOCLIKE_BLOCK(addr, size, rz, zeroed) ((void)0)
#define VALGRIND_FREELIKE_BLOCK(addr, rz) ((void)0)
#define VALGRIND_MAKE_MEM_NOACCESS(addr, size) ((void)0)
#define VALGRIND_MAKE_MEM_UNDEFINED(addr, size) ((void)0)
#define VALGRIND_MAKE_MEM_DEFINED(addr, size) ((void)0)
#else
#include <valgrind/memcheck.h>
#endif

#define POOL_BYTES (64 * 1024)
#define OBJ_BYTES 64

struct pool {
    char *base;      /* the mapping; its first OBJ_BYTES are a header */
    char *next;      /* bump pointer */
    char *end;
    void *free_list; /* freed objects, linked through their first word */
};

static struct pool g_pool;
/* A malloc'd block live at exit (still reachable). Memcheck checks a
 * mempool's blocks for leaks only when some malloc'd block is live at exit
 * (every real program has one); see docs/mempools.md. */
char *g_config;
volatile char g_sink;

static void pool_init(struct pool *p)
{
    p->base = mmap(NULL, POOL_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p->base == MAP_FAILED) {
        perror("mmap");
        return;
    }
    /* Objects start after a header: a pointer to the mapping's start (here
     * p->base) must not point at an object. */
    p->next = p->base + OBJ_BYTES;
    p->end = p->base + POOL_BYTES;
    p->free_list = NULL;
    /* Nothing in the pool may be touched until it is handed out. */
    VALGRIND_MAKE_MEM_NOACCESS(p->base, POOL_BYTES);
#ifndef MALLOCLIKE
    VALGRIND_CREATE_MEMPOOL(p->base, 0, 0);
#endif
}

__attribute__((noinline)) static void *pool_alloc(struct pool *p)
{
    void *o;
    if (p->free_list != NULL) {
        o = p->free_list;
        VALGRIND_MAKE_MEM_DEFINED(o, sizeof(void *)); /* read the link */
        p->free_list = *(void **)o;
    } else {
        if (p->next + OBJ_BYTES > p->end)
            return NULL;
        o = p->next;
        p->next += OBJ_BYTES;
    }
    /* One heap block for Memcheck, undefined, with this call's stack. */
#ifdef MALLOCLIKE
#define POOL_REQUEST VALGRIND_MALLOCLIKE_BLOCK(o, OBJ_BYTES, 0, 0)
#else
#define POOL_REQUEST VALGRIND_MEMPOOL_ALLOC(p->base, o, OBJ_BYTES)
#endif
    POOL_REQUEST; /* @pool_request */
    return o;
}

__attribute__((noinline)) static void pool_free(struct pool *p, void *o)
{
#ifdef MALLOCLIKE
    VALGRIND_FREELIKE_BLOCK(o, 0);
#else
    VALGRIND_MEMPOOL_FREE(p->base, o); /* the block is gone: no access */
#endif
    /* The free list's link lives in the freed object: make that word
     * writable for the store, and inaccessible again after it. */
    VALGRIND_MAKE_MEM_UNDEFINED(o, sizeof(void *));
    *(void **)o = p->free_list;
    p->free_list = o;
    VALGRIND_MAKE_MEM_NOACCESS(o, sizeof(void *));
}

struct item {
    long id;
    char name[48];
};

__attribute__((noinline)) static struct item *make_item(long id)
{
    struct item *it = pool_alloc(&g_pool);
    if (it != NULL) {
        it->id = id;
        snprintf(it->name, sizeof it->name, "item %ld", id);
    }
    return it;
}

__attribute__((noinline)) static long work(void)
{
    struct item *items[8];
    long sum = 0;
    for (int i = 0; i < 8; i++) {
        items[i] = make_item(i);
        sum += items[i]->id;
    }
    for (int i = 0; i < 8; i++)
        pool_free(&g_pool, items[i]);
    struct item *lost = make_item(100); /* @pool_leak */
    sum += lost->id;
    /* Bug: `lost` is never given back (pool_free). */
    return sum;
}

__attribute__((noinline)) static void scrub_stack(void)
{
    volatile char buf[4096];
    memset((char *)buf, 0, sizeof buf);
    g_sink = buf[100];
}

int main(void)
{
    g_config = strdup("pool: 64 KiB");
    pool_init(&g_pool);
    long sum = work();
    scrub_stack();
    printf("sum %ld\n", sum);
    /* The pool is left to the system at exit, as most programs do: a
     * VALGRIND_DESTROY_MEMPOOL here would free its blocks, leaks included,
     * before Memcheck's leak check sees them. */
    return 0;
}
