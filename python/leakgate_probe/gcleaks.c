/*
 * gcleaks.c - leakgate_probe's exit-time view of objects the garbage
 * collector still lists (compiled by the probe at run time against the
 * running interpreter's headers, internal ones included).
 *
 * CPython links every object its garbage collector tracks (lists, dicts,
 * instances, ...) into doubly-linked generation lists through a header in
 * front of the object. An object an extension leaked by reference
 * (PyTuple_Pack's caller never releasing its own lists) has no pointer to it
 * left anywhere but those links, and the links point to the start of its
 * block: Memcheck calls it "still reachable", and the leak passes.
 *
 * At the very end of Py_FinalizeEx (a Py_AtExit function, after the last
 * collection, with no Python code left to run) this shim takes out of the
 * lists the objects nobody else holds, so that Valgrind's final leak check
 * reports them as definitely lost at the line that made them (and what they
 * own as indirectly lost). Which ones, Memcheck itself decides:
 *
 *  - candidates: tracked objects that no other tracked object refers to
 *    (tp_traverse), i.e. held only from outside the collector's view: by a
 *    leaked reference, a C static, module state, a C struct, the interpreter;
 *  - the links themselves are the only start-of-block pointers to a tracked
 *    object (references point 16 bytes into the block, at the PyObject), so
 *    taking a held object out of the lists would turn it "possibly lost":
 *    a group of candidates is taken out for good only when a quick leak
 *    check (VALGRIND_DO_QUICK_LEAK_CHECK, which writes nothing to the XML
 *    report) finds no more possibly-lost blocks with the group out of the
 *    lists than with every object in them; a group that does is split in
 *    halves and each half tried again, down to single objects;
 *  - then the objects that only the taken-out ones refer to follow them the
 *    same way, so a leaked list's lists are lost with it.
 *
 * An object taken out is linked to itself, so a later PyObject_GC_UnTrack
 * (a C++ static destructor dropping a reference at exit) still works. The
 * shim's working memory is mmap'd and every address in it is stored
 * scrambled, so the shim itself holds no pointer Memcheck could follow.
 *
 * Under a preloaded LeakSanitizer (`leakgate run --engine lsan|asan`) no
 * check is needed: LeakSanitizer follows pointers into a block, so every
 * candidate (and follower) is taken out, and its exit-time check, which
 * runs after this hook, reports what nothing else holds.
 *
 * In a forked checker (`checker()`) it first tells whether a full
 * collection would free anything now (`pending()`, the collector's own
 * reachability test, read-only): a test's checkpoint there collects only
 * the young generations. When the checker finds more, it collects fully
 * in its own copy, inside a sandbox (`sandbox()`: a seccomp filter that
 * makes every system call with an effect outside the copy fail, so that
 * the finalizers the collection runs cannot write, delete, send or signal
 * anything the process itself will do again when it collects), and then
 * checks; only where the sandbox cannot be set up does leakgate run the
 * target again with full collections.
 *
 * It is loaded as the extension module `_leakgate_gc` (`arm()`, `result()`);
 * what it did goes into the XML report as a `<clientmsg>` starting with
 * "leakgate-gc ", and onto stderr when LEAKGATE_GC_DEBUG is set.
 */
#define PY_SSIZE_T_CLEAN
#ifndef Py_BUILD_CORE_MODULE
#define Py_BUILD_CORE_MODULE 1
#endif
#include <Python.h>
#if PY_VERSION_HEX < 0x03090000 || defined(Py_GIL_DISABLED)
#error "leakgate's gc shim needs CPython 3.9 or later, with the GIL"
#endif
#include "internal/pycore_gc.h"
#include "internal/pycore_interp.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__linux__)
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#endif

#include "leakgate_probe.h"

#define MC_BASE (((unsigned long)'M' << 24) | ((unsigned long)'C' << 16))
#define MC_DO_LEAK_CHECK (MC_BASE + 6)
#define MC_COUNT_LEAK_BLOCKS (MC_BASE + 12)

/* Scrambles an address so that Memcheck's scan does not take it for one. */
#define SCRAMBLE ((uintptr_t)0xA5C3E1F00F1E3C5AULL)
#define HIDE(p) ((uintptr_t)(p) ^ SCRAMBLE)
#define SHOW(v) ((PyGC_Head *)((uintptr_t)(v) ^ SCRAMBLE))

/* At most this many quick leak checks per exit. */
#define MAX_CHECKS 160

static struct _gc_runtime_state *gcstate;

static char result[256] = "not run";

/* One node of the collector's lists. */
struct node {
    uintptr_t gc;        /* the PyGC_Head, scrambled */
    uintptr_t saved[2];  /* its _gc_next, _gc_prev while out, scrambled */
    long refs;           /* references from tracked objects */
    long out_refs;       /* references from objects taken out */
    int state;           /* 0 in the lists, 1 candidate, 2 out, 3 held */
};

static struct node *nodes;
static size_t n_nodes, nodes_cap;
/* Where the frozen objects (gc.freeze(): the permanent generation, which
 * no collection looks at) start in `nodes`. */
static size_t n_collected;
/* Open-addressing table: scrambled PyGC_Head -> index + 1. */
static uintptr_t *tab_key;
static size_t *tab_val;
static size_t tab_cap;
static int checks;
static int debug;

/* Seconds since `t0` (LEAKGATE_GC_DEBUG timings). */
static double
since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

static void *
map(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static size_t
slot(uintptr_t key)
{
    uint64_t h = (uint64_t)key * 0x9E3779B97F4A7C15ULL;
    return (size_t)(h >> 17) & (tab_cap - 1);
}

/* The node of the object whose header `g` would be, or -1. Only the
 * address is hashed: a referent that is not a tracked object (a str, an
 * int) is simply not found, without reading its memory (the visit
 * functions below pass every referent: PyObject_IS_GC would read its type,
 * a cache miss each). */
static long
lookup(PyGC_Head *g)
{
    uintptr_t k = HIDE(g);
    for (size_t i = slot(k);; i = (i + 1) & (tab_cap - 1)) {
        if (tab_val[i] == 0)
            return -1;
        if (tab_key[i] == k)
            return (long)tab_val[i] - 1;
    }
}

static void
insert(PyGC_Head *g, size_t idx)
{
    uintptr_t k = HIDE(g);
    size_t i = slot(k);
    while (tab_val[i] != 0)
        i = (i + 1) & (tab_cap - 1);
    tab_key[i] = k;
    tab_val[i] = idx + 1;
}

static void
list_heads(PyGC_Head **heads, int *n)
{
    *n = 0;
#if PY_VERSION_HEX >= 0x030E0000
    heads[(*n)++] = &gcstate->young.head;
    heads[(*n)++] = &gcstate->old[0].head;
    heads[(*n)++] = &gcstate->old[1].head;
#else
    for (int i = 0; i < NUM_GENERATIONS; i++)
        heads[(*n)++] = &gcstate->generations[i].head;
#endif
    heads[(*n)++] = &gcstate->permanent_generation.head;
}

/* Room for twice as many nodes (mremap moves the pages, not the bytes). */
static int
grow_nodes(void)
{
    size_t cap = nodes_cap ? 2 * nodes_cap : 65536;
    void *p = nodes == NULL ? mmap(NULL, cap * sizeof *nodes, PROT_READ | PROT_WRITE,
                                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                            : mremap(nodes, nodes_cap * sizeof *nodes, cap * sizeof *nodes,
                                     MREMAP_MAYMOVE);
    if (p == MAP_FAILED)
        return -1;
    nodes = p;
    nodes_cap = cap;
    return 0;
}

/* One walk along the lists (each step a cache miss: the next header), then
 * the table from the array. */
static int
collect_nodes(void)
{
    PyGC_Head *heads[8];
    int nh;
    list_heads(heads, &nh);
    for (int i = 0; i < nh; i++) {
        if (i == nh - 1)
            n_collected = n_nodes;
        for (PyGC_Head *g = _PyGCHead_NEXT(heads[i]); g != heads[i]; g = _PyGCHead_NEXT(g)) {
            if (n_nodes == nodes_cap && grow_nodes() < 0)
                return -1;
            nodes[n_nodes++].gc = HIDE(g);
        }
    }
    if (nodes == NULL && grow_nodes() < 0)
        return -1;
    tab_cap = 16;
    while (tab_cap < 2 * n_nodes)
        tab_cap <<= 1;
    tab_key = map(tab_cap * sizeof *tab_key);
    tab_val = map(tab_cap * sizeof *tab_val);
    if (tab_key == NULL || tab_val == NULL)
        return -1;
    for (size_t i = 0; i < n_nodes; i++)
        insert(SHOW(nodes[i].gc), i);
    return 0;
}

static int
count_ref(PyObject *op, void *arg)
{
    (void)arg;
    if (op == NULL)
        return 0;
    long i = lookup(_Py_AS_GC(op));
    if (i >= 0)
        nodes[i].refs++;
    return 0;
}

/* Where count_out_ref puts the nodes that become followers. */
struct found {
    size_t *idx;
    size_t n;
};

/* Counts a reference from an object taken out; a node in the lists that
 * nothing but taken-out objects refer to any more becomes a follower. */
static int
count_out_ref(PyObject *op, void *arg)
{
    if (op == NULL)
        return 0;
    long i = lookup(_Py_AS_GC(op));
    if (i >= 0 && ++nodes[i].out_refs == nodes[i].refs && nodes[i].state == 0) {
        struct found *f = arg;
        f->idx[f->n++] = (size_t)i;
    }
    return 0;
}

static void
traverse(size_t i, visitproc visit, void *arg)
{
    PyObject *op = (PyObject *)(SHOW(nodes[i].gc) + 1);
    traverseproc t = Py_TYPE(op)->tp_traverse;
    if (t != NULL)
        t(op, visit, arg);
}

/* count_garbage's working state: which nodes a root reaches, and the
 * nodes reached whose references are still to be followed. */
struct reach {
    unsigned char *seen;
    size_t *todo;
    size_t n;
};

static int
visit_reach(PyObject *op, void *arg)
{
    if (op == NULL)
        return 0;
    long i = lookup(_Py_AS_GC(op));
    struct reach *r = arg;
    if (i >= 0 && !r->seen[i]) {
        r->seen[i] = 1;
        r->todo[r->n++] = (size_t)i;
    }
    return 0;
}

/* How many tracked objects a full collection would find unreachable now
 * (cyclic garbage, what gc.collect() would free), without collecting:
 * the collector's own test, read-only. Roots are the objects with more
 * references than the tracked objects hold (refcount > refs: referred to
 * from outside the lists) and the frozen ones; the garbage is what no
 * root reaches through tp_traverse. Needs `refs` (count_ref) counted;
 * (size_t)-1 when it cannot tell (no memory). */
static size_t
count_garbage(void)
{
    if (n_nodes == 0)
        return 0;
    struct reach r = {map(n_nodes), map(n_nodes * sizeof(size_t)), 0};
    size_t garbage = (size_t)-1;
    if (r.seen != NULL && r.todo != NULL) {
        for (size_t i = 0; i < n_nodes; i++) {
            PyObject *op = (PyObject *)(SHOW(nodes[i].gc) + 1);
            if (i >= n_collected || (long)Py_REFCNT(op) > nodes[i].refs) {
                r.seen[i] = 1;
                r.todo[r.n++] = i;
            }
        }
        size_t reached = r.n;
        while (r.n > 0) {
            size_t before = r.n - 1;
            size_t i = r.todo[before];
            r.n = before;
            traverse(i, visit_reach, &r);
            reached += r.n - before;
        }
        garbage = n_nodes - reached;
    }
    if (r.seen != NULL)
        munmap(r.seen, n_nodes);
    if (r.todo != NULL)
        munmap(r.todo, n_nodes * sizeof(size_t));
    return garbage;
}

static int
by_index(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/* Takes node i out of its list; it is linked to itself. */
static void
take_out(size_t i)
{
    PyGC_Head *g = SHOW(nodes[i].gc);
    PyGC_Head *prev = _PyGCHead_PREV(g), *next = _PyGCHead_NEXT(g);
    nodes[i].saved[0] = HIDE(g->_gc_next);
    nodes[i].saved[1] = HIDE(g->_gc_prev);
    _PyGCHead_SET_NEXT(prev, next);
    _PyGCHead_SET_PREV(next, prev);
    _PyGCHead_SET_NEXT(g, g);
    _PyGCHead_SET_PREV(g, g);
}

/* Puts node i back where take_out found it (undo in reverse order). */
static void
put_back(size_t i)
{
    PyGC_Head *g = SHOW(nodes[i].gc);
    g->_gc_next = (uintptr_t)SHOW(nodes[i].saved[0]);
    g->_gc_prev = (uintptr_t)SHOW(nodes[i].saved[1]);
    PyGC_Head *prev = _PyGCHead_PREV(g), *next = _PyGCHead_NEXT(g);
    _PyGCHead_SET_NEXT(prev, g);
    _PyGCHead_SET_PREV(next, g);
}

/* Possibly-lost blocks after a quick (summary) leak check. */
static unsigned long
dubious_blocks(void)
{
    volatile unsigned long lc[6] = {MC_DO_LEAK_CHECK, 1, 0, 0, 0, 0};
    leakgate_request(lc, 0);
    checks++;
    unsigned long leaked = 0, dubious = 0, reachable = 0, suppressed = 0;
    volatile unsigned long cnt[6] = {MC_COUNT_LEAK_BLOCKS, (unsigned long)&leaked,
                                     (unsigned long)&dubious, (unsigned long)&reachable,
                                     (unsigned long)&suppressed, 0};
    leakgate_request(cnt, 0);
    return dubious;
}

/* Valgrind's error reporting off (1) or on again (-1) for this thread:
 * the scan below reads words whose definedness it does not care about. */
static void
errors_off(long on_off)
{
    volatile unsigned long a[6] = {0x1801, (unsigned long)on_off, 0, 0, 0, 0};
    leakgate_request(a, 0);
}

/* Marks as held (state 3) the candidates that a word in a loaded object's
 * writable segments (.data, .bss: C statics, the interpreter's own state)
 * points to: they are not leaked, and Memcheck would see them as possibly
 * lost once out of the lists. Saves a quick leak check per such object. */
static size_t
held_by_statics(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (f == NULL)
        return 0;
    size_t found = 0;
    char line[4096];
    int after_file = 0;
    errors_off(1);
    while (fgets(line, sizeof line, f) != NULL) {
        unsigned long lo, hi;
        char perms[8] = "";
        int path_at = 0;
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &lo, &hi, perms, &path_at) < 3)
            continue;
        const char *path = line + path_at;
        int has_path = path_at > 0 && path[0] == '/';
        int anon = path_at == 0 || path[0] == '\n' || path[0] == '\0';
        int ours = has_path && (strstr(path, "valgrind") != NULL || strstr(path, "vgdb") != NULL ||
                                strstr(path, "leakgate-gc") != NULL);
        int scan = perms[0] == 'r' && perms[1] == 'w' && perms[3] == 'p' &&
                   ((has_path && !ours) || (anon && after_file && perms[2] != 'x'));
        after_file = has_path && !ours;
        if (!scan)
            continue;
        if (debug > 1)
            fprintf(stderr, "leakgate_probe: gc: scanning %lu KiB: %s", (hi - lo) >> 10, line);
        for (uintptr_t *w = (uintptr_t *)lo; w < (uintptr_t *)hi; w++) {
            uintptr_t v = *w;
            if (v < 4096 || (v & 7) != 0)
                continue;
            long i = lookup((PyGC_Head *)v - 1);
            if (i >= 0 && nodes[i].state == 1) {
                nodes[i].state = 3;
                found++;
            }
        }
    }
    errors_off(-1);
    fclose(f);
    return found;
}

static unsigned long base_dubious;
static int gave_up;
/* In a checker: count_garbage() before anything is taken out. */
static int want_garbage;
static size_t garbage = (size_t)-1;
/* LeakSanitizer preloaded (leakgate run --engine lsan|asan): it counts a
 * pointer into a block as a reference, so taking a held object out of the
 * lists never makes it look lost; every candidate goes, without checks. */
static int sanitizer;

/* Takes out for good the members of idx[0..n) that can go without
 * making anything possibly lost. */
static size_t
settle(size_t *idx, size_t n)
{
    if (n == 0)
        return 0;
    if (sanitizer) {
        for (size_t k = 0; k < n; k++) {
            take_out(idx[k]);
            nodes[idx[k]].state = 2;
        }
        return n;
    }
    if (checks >= MAX_CHECKS) {
        gave_up = 1;
        return 0;
    }
    for (size_t k = 0; k < n; k++)
        take_out(idx[k]);
    unsigned long d = dubious_blocks();
    if (d <= base_dubious) {
        for (size_t k = 0; k < n; k++)
            nodes[idx[k]].state = 2;
        return n;
    }
    for (size_t k = n; k-- > 0;)
        put_back(idx[k]);
    if (n == 1) {
        nodes[idx[0]].state = 3;
        return 0;
    }
    size_t h = n / 2;
    return settle(idx, h) + settle(idx + h, n - h);
}

static void
leakgate_gc_exit(void)
{
    if (gcstate == NULL || (!sanitizer && leakgate_running_on_valgrind() == 0))
        return;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (collect_nodes() < 0) {
        snprintf(result, sizeof result, "not run (no memory)");
        return;
    }
    for (size_t i = 0; i < n_nodes; i++)
        traverse(i, count_ref, NULL);
    if (want_garbage)
        garbage = count_garbage();
    size_t *idx = map((n_nodes ? n_nodes : 1) * sizeof *idx);
    if (idx == NULL)
        return;
    size_t n = 0;
    for (size_t i = 0; i < n_nodes; i++)
        if (nodes[i].refs == 0) {
            nodes[i].state = 1;
            idx[n++] = i;
        }
    size_t candidates = n;
    if (debug > 1)
        fprintf(stderr, "leakgate_probe: gc: %zu candidates after %.2f s\n", candidates, since(&t0));
    /* LeakSanitizer scans the statics itself: taking out an object they
     * hold makes nothing look lost there. */
    size_t statics = sanitizer ? 0 : held_by_statics();
    if (debug > 1)
        fprintf(stderr, "leakgate_probe: gc: statics scanned after %.2f s\n", since(&t0));
    n = 0;
    for (size_t i = 0; i < n_nodes; i++)
        if (nodes[i].state == 1)
            idx[n++] = i;
    base_dubious = dubious_blocks();
    size_t out = settle(idx, n);
    /* What only the objects taken out refer to follows them, round by
     * round: each round counts the references of the objects the last one
     * took out (out_refs adds up over the rounds), and its followers are
     * the nodes whose count reached their references from tracked objects. */
    size_t followers = 0;
    size_t *fresh = map((n_nodes ? n_nodes : 1) * sizeof *fresh); /* NULL: no followers */
    for (int round = 0; round < 64 && out > 0 && fresh != NULL && !gave_up; round++) {
        /* idx[0..n): what the last settle() was given. */
        size_t n_fresh = 0;
        for (size_t k = 0; k < n; k++)
            if (nodes[idx[k]].state == 2)
                fresh[n_fresh++] = idx[k];
        struct found f = {idx, 0};
        for (size_t k = 0; k < n_fresh; k++)
            traverse(fresh[k], count_out_ref, &f);
        n = f.n;
        if (n == 0)
            break;
        /* In the order of the lists, as a scan of every node would give. */
        qsort(idx, n, sizeof *idx, by_index);
        for (size_t k = 0; k < n; k++)
            nodes[idx[k]].state = 1;
        size_t got = settle(idx, n);
        followers += got;
        if (got == 0)
            break;
        out += got;
    }
    size_t held = 0;
    for (size_t i = 0; i < n_nodes; i++) {
        held += nodes[i].state == 3;
        if (debug > 1 && nodes[i].refs == 0)
            fprintf(stderr, "  %s state %d refcnt %ld\n", Py_TYPE((PyObject *)(SHOW(nodes[i].gc) + 1))->tp_name, nodes[i].state, (long)Py_REFCNT((PyObject *)(SHOW(nodes[i].gc) + 1)));
    }
    snprintf(result, sizeof result,
             "%zu tracked, %zu held only from outside, %zu taken out (%zu followers), "
             "%zu held (%zu by statics), %d quick checks%s",
             n_nodes, candidates, out, followers, held, statics, checks,
             gave_up ? " (gave up: too many)" : "");
    if (debug)
        fprintf(stderr, "leakgate_probe: gc at exit: %s (%.2f s)\n", result, since(&t0));
    /* One line in the XML report for leakgate (a <clientmsg>). */
    char msg[400];
    char va[64] = {0}; /* a va_list nobody reads: the text has no % */
    snprintf(msg, sizeof msg,
             "leakgate-gc {\"v\":1,\"tracked\":%zu,\"candidates\":%zu,\"out\":%zu,"
             "\"held\":%zu,\"checks\":%d,\"complete\":%s}\n",
             n_nodes, candidates, out, held, checks, gave_up ? "false" : "true");
    volatile unsigned long pr[6] = {0x1403, (unsigned long)msg, (unsigned long)va, 0, 0, 0};
    leakgate_request(pr, 0);
}

/* _leakgate_gc.arm(): arms the exit hook for the main interpreter; returns
 * "armed" or why not. */
static PyObject *
arm(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    const char *engine = getenv("LEAKGATE_ENGINE");
    sanitizer = engine != NULL && (strcmp(engine, "lsan") == 0 || strcmp(engine, "asan") == 0);
    if (!sanitizer && leakgate_running_on_valgrind() == 0)
        return PyUnicode_FromString("kept (not under Valgrind)");
    PyInterpreterState *interp = PyInterpreterState_Get();
    if (interp != PyInterpreterState_Main())
        return PyUnicode_FromString("kept (not the main interpreter)");
    const char *dbg = getenv("LEAKGATE_GC_DEBUG");
    debug = dbg == NULL ? 0 : dbg[0] == '2' ? 2 : dbg[0] != '0';
    if (gcstate == NULL) {
        gcstate = &interp->gc;
        if (Py_AtExit(leakgate_gc_exit) < 0) {
            gcstate = NULL;
            return PyUnicode_FromString("kept (Py_AtExit is full)");
        }
    }
    return PyUnicode_FromString("armed");
}

/* Forgets the nodes and the table, for a second walk of the lists. */
static void
reset_nodes(void)
{
    if (nodes != NULL)
        memset(nodes, 0, n_nodes * sizeof *nodes);
    n_nodes = 0;
    n_collected = 0;
    if (tab_key != NULL)
        munmap(tab_key, tab_cap * sizeof *tab_key);
    if (tab_val != NULL)
        munmap(tab_val, tab_cap * sizeof *tab_val);
    tab_key = NULL;
    tab_val = NULL;
    tab_cap = 0;
}

/* _leakgate_gc.pending(): how many tracked objects a full collection would
 * free now (cyclic garbage; -1: not known), read-only; the lists are left
 * as they are. */
static PyObject *
pending(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    PyInterpreterState *interp = PyInterpreterState_Get();
    if (interp != PyInterpreterState_Main())
        return PyLong_FromLong(-1);
    gcstate = &interp->gc;
    reset_nodes();
    size_t g = (size_t)-1;
    if (collect_nodes() == 0) {
        for (size_t i = 0; i < n_nodes; i++)
            traverse(i, count_ref, NULL);
        g = count_garbage();
    }
    reset_nodes();
    return PyLong_FromSsize_t(g == (size_t)-1 ? -1 : (Py_ssize_t)g);
}

#if defined(__linux__) && (defined(__x86_64__) || defined(__aarch64__))
#if defined(__x86_64__)
#define SANDBOX_ARCH AUDIT_ARCH_X86_64
#else
#define SANDBOX_ARCH AUDIT_ARCH_AARCH64
#endif
#define ARG_LO(k) (offsetof(struct seccomp_data, args) + 8 * (k))
#define DENY BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA))
#define ALLOW BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
#define LOAD_NR BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
#define SANDBOX_MAX 256

struct prog {
    struct sock_filter f[SANDBOX_MAX];
    unsigned short n;
    int full; /* an instruction did not fit: refused */
};

static void
emit(struct prog *p, struct sock_filter s)
{
    if (p->n < SANDBOX_MAX)
        p->f[p->n++] = s;
    else
        p->full = 1;
}

/* `nr`: allowed only when its argument `arg` equals `value`. */
static void
only_with(struct prog *p, long nr, int arg, unsigned int value)
{
    emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned int)nr, 0, 4));
    emit(p, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(arg)));
    emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, value, 0, 1));
    emit(p, (struct sock_filter)ALLOW);
    emit(p, (struct sock_filter)DENY);
}

/* `nr`: denied when its argument `arg` has any of the bits of `mask`. */
static void
deny_bits(struct prog *p, long nr, int arg, unsigned int mask)
{
    emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned int)nr, 0, 4));
    emit(p, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(arg)));
    emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, mask, 0, 1));
    emit(p, (struct sock_filter)DENY);
    emit(p, (struct sock_filter)ALLOW);
}

static void
deny(struct prog *p, long nr)
{
    emit(p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned int)nr, 0, 1));
    emit(p, (struct sock_filter)DENY);
}
#endif

/* _leakgate_gc.sandbox(fd): in a forked checker only, before it collects
 * fully in its copy. A seccomp filter makes every system call that would
 * reach outside the copy fail with EPERM: writes to any descriptor but
 * `fd` (the runtime's log), opening a file for writing, deleting,
 * renaming, truncating, creating or changing files, sending, connecting,
 * and signals to other processes. A finalizer of the collected garbage
 * (a file's flush, a temporary directory's removal, a pool's terminate)
 * then changes nothing the process itself will do again when it collects
 * the same garbage. Reading, memory and the runtime's own leak check
 * (clone, ptrace, waitpid) are left as they are. Raises OSError where it
 * cannot be set up (then leakgate runs the target again with full
 * collections instead). Never call it in a process that goes on. */
static PyObject *
sandbox(PyObject *self, PyObject *args)
{
    (void)self;
    int fd;
    if (!PyArg_ParseTuple(args, "i", &fd))
        return NULL;
#if defined(__linux__) && (defined(__x86_64__) || defined(__aarch64__))
    unsigned int me = (unsigned int)getpid();
    struct prog p;
    p.n = 0;
    p.full = 0;
    emit(&p, (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                          offsetof(struct seccomp_data, arch)));
    emit(&p, (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SANDBOX_ARCH, 1, 0));
    emit(&p, (struct sock_filter)DENY);
    emit(&p, (struct sock_filter)LOAD_NR);
    /* Writes: the log only. */
    only_with(&p, SYS_write, 0, (unsigned int)fd);
    only_with(&p, SYS_writev, 0, (unsigned int)fd);
    only_with(&p, SYS_pwrite64, 0, (unsigned int)fd);
    only_with(&p, SYS_pwritev, 0, (unsigned int)fd);
#ifdef SYS_pwritev2
    only_with(&p, SYS_pwritev2, 0, (unsigned int)fd);
#endif
    /* Signals: this process only. */
    only_with(&p, SYS_kill, 0, me);
    only_with(&p, SYS_tkill, 0, me);
    only_with(&p, SYS_tgkill, 0, me);
    only_with(&p, SYS_rt_sigqueueinfo, 0, me);
    only_with(&p, SYS_rt_tgsigqueueinfo, 0, me);
#ifdef SYS_pidfd_send_signal
    deny(&p, SYS_pidfd_send_signal);
#endif
    unsigned int writing = O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND;
    deny_bits(&p, SYS_openat, 2, writing);
#ifdef SYS_open
    deny_bits(&p, SYS_open, 1, writing);
    deny(&p, SYS_creat);
#endif
#ifdef SYS_openat2
    deny(&p, SYS_openat2);
#endif
    static const long denied[] = {
        SYS_unlinkat, SYS_renameat, SYS_truncate, SYS_ftruncate, SYS_fallocate,
        SYS_mkdirat, SYS_mknodat, SYS_symlinkat, SYS_linkat, SYS_fchmod, SYS_fchmodat,
        SYS_fchown, SYS_fchownat, SYS_utimensat, SYS_sendto, SYS_sendmsg, SYS_sendmmsg,
        SYS_shutdown, SYS_connect, SYS_bind, SYS_listen, SYS_sendfile, SYS_splice, SYS_tee,
        SYS_vmsplice, SYS_copy_file_range, SYS_setxattr, SYS_fsetxattr, SYS_lsetxattr,
        SYS_removexattr, SYS_fremovexattr, SYS_lremovexattr, SYS_flock, SYS_msync,
#ifdef SYS_renameat2
        SYS_renameat2,
#endif
#ifdef SYS_unlink
        SYS_unlink, SYS_rmdir, SYS_rename, SYS_mkdir, SYS_mknod, SYS_symlink, SYS_link,
        SYS_chmod, SYS_chown, SYS_lchown, SYS_utimes, SYS_utime, SYS_futimesat,
#endif
    };
    for (size_t k = 0; k < sizeof denied / sizeof denied[0]; k++)
        deny(&p, denied[k]);
    emit(&p, (struct sock_filter)ALLOW);
    if (p.full) {
        PyErr_SetString(PyExc_OSError, "sandbox: filter too long");
        return NULL;
    }
    struct sock_fprog fprog = {p.n, p.f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog, 0, 0) != 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    Py_RETURN_NONE;
#else
    (void)fd;
    PyErr_SetString(PyExc_OSError, "sandbox: not on this platform");
    return NULL;
#endif
}

/* LeakSanitizer's interface, when it is preloaded (weak: absent otherwise). */
extern void __lsan_register_root_region(const void *p, size_t size) __attribute__((weak));

/* _leakgate_gc.checker(): for a forked copy of the process that runs one
 * checkpoint's leak check (leakgate run --engine lsan|asan; the probe's
 * checkers) and then ends. Takes out of the lists what only the lists
 * hold, as the exit hook does, so that the check reports a leaked
 * reference to a tracked object at the checkpoint after the test that
 * leaked it, where Valgrind names it too. The frame stacks' chunks (mmap'd
 * memory LeakSanitizer does not scan) become root regions first: an object
 * only a running frame holds is not leaked. Never call it in a process
 * that goes on: its lists are left changed. Returns what it did. */
static PyObject *
checker(PyObject *self, PyObject *args)
{
    (void)self;
    int young = 0;
    if (!PyArg_ParseTuple(args, "|p", &young))
        return NULL;
    if (__lsan_register_root_region == NULL)
        return PyUnicode_FromString("not run (no LeakSanitizer)");
    PyInterpreterState *interp = PyInterpreterState_Get();
    if (interp != PyInterpreterState_Main())
        return PyUnicode_FromString("not run (not the main interpreter)");
    size_t regions = 0;
#if PY_VERSION_HEX >= 0x030B0000
    /* The live part of each chunk only (up to its top): the slots above
     * hold stale pointers to objects long freed, whose blocks a leak may
     * have reused since. */
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(interp); ts != NULL;
         ts = PyThreadState_Next(ts))
        for (_PyStackChunk *c = ts->datastack_chunk; c != NULL; c = c->previous) {
            PyObject **top = c == ts->datastack_chunk ? ts->datastack_top : &c->data[c->top];
            if (top > &c->data[0] && (char *)top <= (char *)c + c->size)
                __lsan_register_root_region(&c->data[0], (size_t)((char *)top - (char *)&c->data[0]));
            regions++;
        }
#endif
    sanitizer = 1;
    want_garbage = young;
    gcstate = &interp->gc;
    leakgate_gc_exit();
    char text[400];
    snprintf(text, sizeof text, "%s; %zu frame-stack chunks scanned", result, regions);
    return PyUnicode_FromString(text);
}

/* _leakgate_gc.garbage(): after checker(), how many tracked objects a full
 * collection would have freed at the checkpoint (-1: not known). */
static PyObject *
get_garbage(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyLong_FromSsize_t(garbage == (size_t)-1 ? -1 : (Py_ssize_t)garbage);
}

/* _leakgate_gc.result(): what the exit hook did ("not run" before). */
static PyObject *
get_result(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyUnicode_FromString(result);
}

static PyMethodDef gc_methods[] = {
    {"arm", arm, METH_NOARGS, "Arms the exit hook; returns \"armed\" or why not."},
    {"result", get_result, METH_NOARGS, "What the exit hook did."},
    {"garbage", get_garbage, METH_NOARGS,
     "After checker(): the objects a full collection would have freed (-1: unknown)."},
    {"pending", pending, METH_NOARGS,
     "The objects a full collection would free now (-1: unknown); read-only."},
    {"sandbox", sandbox, METH_VARARGS,
     "In a forked checker only: system calls that reach outside the copy fail from now on."},
    {"checker", checker, METH_VARARGS,
     "In a forked checker only: takes what only the lists hold out of them."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef gc_module = {
    PyModuleDef_HEAD_INIT, "_leakgate_gc", NULL, -1, gc_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__leakgate_gc(void)
{
    return PyModule_Create(&gc_module);
}
