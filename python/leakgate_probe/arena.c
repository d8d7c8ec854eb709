/*
 * arena.c - leakgate_probe's view of CPython's arena allocator (compiled by
 * the probe at run time against the running interpreter's headers, and
 * installed from leakgate's sitecustomize before the user's code runs).
 *
 * CPython 3.11 and later take the chunks of a thread's frame stack (16 KiB
 * and up: `_PyThreadState_PushFrame` -> `push_chunk` -> `allocate_chunk` ->
 * `_PyObject_VirtualAlloc`) from its arena allocator, which is mmap, also
 * under PYTHONMALLOC=malloc. Memcheck knows no heap block there: a chunk an
 * extension leaks (greenlet 2.0.0 leaked one per greenlet on 3.11,
 * python-greenlet/greenlet#328) has no loss record at all, and the mapping
 * it lies in is even scanned as a root of the leak check.
 *
 * This shim wraps the allocator (`PyObject_GetArenaAllocator` /
 * `PyObject_SetArenaAllocator`). Its alloc takes the memory from the heap
 * (calloc: zeroed like mmap'd memory, which CPython gets from the original)
 * instead, so that Memcheck tracks every chunk as a heap block with the
 * stack of the code that made it: a leaked chunk is definitely lost at the
 * extension's line, exactly like a leaked malloc block, and a live one is
 * reachable from its thread state. Its free gives the heap's blocks back
 * to free() and passes everything else (chunks and arenas made before the
 * wrapper was installed: the main thread's first chunk) to the original
 * free untouched; a small set of the blocks it made tells them apart. The
 * set lives in mmap'd memory and holds the addresses scrambled, so that it
 * keeps no block reachable.
 *
 * Why not the original memory described with VALGRIND_MALLOCLIKE_BLOCK (or
 * a mempool)? Memcheck then reports the block, but still scans the mapping
 * it lies in as a root: a leaked chunk whose frames point into it (a
 * nested call's `previous` frame) is only "possibly lost", and what its
 * stale frames point to stays reachable. A heap block has neither problem,
 * and Memcheck also checks accesses to it (redzones, use after free).
 *
 * It is loaded as the extension module `_leakgate_arena` (`install()`,
 * `stats()`); LEAKGATE_ARENA=keep in the environment leaves the allocator
 * alone (the probe does not even load the shim).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#if PY_VERSION_HEX < 0x030B0000 || defined(Py_GIL_DISABLED)
#error "leakgate's arena shim needs CPython 3.11 or later, with the GIL"
#endif

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "leakgate_probe.h"

/* Scrambles an address so that Memcheck's scan does not take it for one. */
#define SCRAMBLE ((uintptr_t)0xA5C3E1F00F1E3C5AULL)
#define EMPTY ((uintptr_t)0)
#define GONE ((uintptr_t)1)

static PyObjectArenaAllocator orig;
static int installed;

/* Open addressing: scrambled addresses of the blocks this wrapper made;
 * EMPTY and GONE (a deleted slot) are never a scrambled block address. */
static uintptr_t *tab;
static size_t tab_cap, tab_used, tab_live;
static volatile int lock;
static unsigned long n_alloc, n_free, n_passed;

static void
take(void)
{
    while (__atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE))
        ;
}

static void
give(void)
{
    __atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
}

static size_t
slot(uintptr_t key, size_t cap)
{
    uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ULL;
    return (size_t)(h >> 17) & (cap - 1);
}

static uintptr_t *
map_table(size_t cap)
{
    void *p = mmap(NULL, cap * sizeof(uintptr_t), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : (uintptr_t *)p;
}

/* Rebuilds the table with room for twice the live entries; 0 on success. */
static int
grow(void)
{
    size_t cap = 64;
    while (cap < 4 * (tab_live + 1))
        cap <<= 1;
    uintptr_t *t = map_table(cap);
    if (t == NULL)
        return -1;
    for (size_t i = 0; i < tab_cap; i++) {
        uintptr_t k = tab[i];
        if (k == EMPTY || k == GONE)
            continue;
        size_t j = slot(k, cap);
        while (t[j] != EMPTY)
            j = (j + 1) & (cap - 1);
        t[j] = k;
    }
    if (tab != NULL)
        munmap(tab, tab_cap * sizeof(uintptr_t));
    tab = t;
    tab_cap = cap;
    tab_used = tab_live;
    return 0;
}

static int
remember(void *p)
{
    uintptr_t k = (uintptr_t)p ^ SCRAMBLE;
    if ((tab_used + 1) * 2 > tab_cap && grow() < 0)
        return -1;
    size_t i = slot(k, tab_cap);
    while (tab[i] != EMPTY && tab[i] != GONE)
        i = (i + 1) & (tab_cap - 1);
    if (tab[i] == EMPTY)
        tab_used++;
    tab[i] = k;
    tab_live++;
    return 0;
}

/* Whether p is one of ours; forgets it if so. */
static int
forget(void *p)
{
    if (tab == NULL)
        return 0;
    uintptr_t k = (uintptr_t)p ^ SCRAMBLE;
    for (size_t i = slot(k, tab_cap);; i = (i + 1) & (tab_cap - 1)) {
        if (tab[i] == EMPTY)
            return 0;
        if (tab[i] == k) {
            tab[i] = GONE;
            tab_live--;
            return 1;
        }
    }
}

static void *
leakgate_arena_alloc(void *ctx, size_t size)
{
    (void)ctx;
    void *p = calloc(1, size);
    if (p == NULL)
        return NULL;
    take();
    int bad = remember(p);
    if (!bad)
        n_alloc++;
    give();
    if (bad) {
        /* No room to remember it: the original allocator's memory. */
        free(p);
        return orig.alloc(orig.ctx, size);
    }
    return p;
}

static void
leakgate_arena_free(void *ctx, void *ptr, size_t size)
{
    (void)ctx;
    if (ptr == NULL)
        return;
    take();
    int ours = forget(ptr);
    if (ours)
        n_free++;
    else
        n_passed++;
    give();
    if (ours)
        free(ptr);
    else
        orig.free(orig.ctx, ptr, size);
}

/* _leakgate_arena.install(): wraps the arena allocator; returns
 * "installed" or why not. */
static PyObject *
install(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    if (leakgate_running_on_valgrind() == 0)
        return PyUnicode_FromString("kept (not under Valgrind)");
    if (!installed) {
        PyObjectArenaAllocator mine = {NULL, leakgate_arena_alloc, leakgate_arena_free};
        PyObject_GetArenaAllocator(&orig);
        if (orig.alloc == NULL || orig.free == NULL)
            return PyUnicode_FromString("kept (no arena allocator)");
        take();
        int bad = grow();
        give();
        if (bad)
            return PyUnicode_FromString("kept (no memory)");
        PyObject_SetArenaAllocator(&mine);
        installed = 1;
    }
    return PyUnicode_FromString("installed");
}

/* _leakgate_arena.stats(): (blocks made, freed, frees passed to the
 * original allocator, blocks live). */
static PyObject *
stats(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    take();
    unsigned long a = n_alloc, f = n_free, p = n_passed, l = (unsigned long)tab_live;
    give();
    return Py_BuildValue("(kkkk)", a, f, p, l);
}

static PyMethodDef arena_methods[] = {
    {"install", install, METH_NOARGS, "Wraps the arena allocator; returns \"installed\" or why not."},
    {"stats", stats, METH_NOARGS, "(made, freed, passed through, live)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef arena_module = {
    PyModuleDef_HEAD_INIT, "_leakgate_arena", NULL, -1, arena_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__leakgate_arena(void)
{
    return PyModule_Create(&arena_module);
}
