/*
 * tasklet.c - a CPython C extension that runs a callable on a frame stack
 * of its own, as greenlet does when it first switches into a greenlet
 * (tests/it/arena.rs; see README.md).
 *
 * CPython 3.11+ keeps a thread's Python frames in chunks of 16 KiB and up
 * (tstate->datastack_chunk, _top, _limit). run(fn) saves the caller's
 * stack, empties it so that the interpreter starts a fresh root chunk for
 * fn's frames (taken from the arena allocator: mmap), and restores the
 * caller's when fn returns. The fresh chunk is then the tasklet's to free:
 * run() forgets it (one 16 KiB chunk leaked per call, the bug of greenlet
 * 2.0.0 on Python 3.11: python-greenlet/greenlet#328); run_fixed() gives
 * it back to the arena allocator, as greenlet 2.0.1 does.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#if PY_VERSION_HEX < 0x030B0000
#error "tasklet needs CPython 3.11 or later (frame-stack chunks)"
#endif

/* Calls fn on a fresh frame stack; returns its result and, in *chunk, the
 * root chunk the interpreter made for fn's frames. */
static PyObject *
call_on_own_stack(PyObject *fn, _PyStackChunk **chunk)
{
    PyThreadState *ts = PyThreadState_Get();
    _PyStackChunk *saved_chunk = ts->datastack_chunk;
    PyObject **saved_top = ts->datastack_top, **saved_limit = ts->datastack_limit;
    ts->datastack_chunk = NULL;
    ts->datastack_top = NULL;
    ts->datastack_limit = NULL;
    PyObject *r = PyObject_CallNoArgs(fn); /* @chunk */
    *chunk = ts->datastack_chunk;
    ts->datastack_chunk = saved_chunk;
    ts->datastack_top = saved_top;
    ts->datastack_limit = saved_limit;
    return r;
}

static PyObject *
run(PyObject *self, PyObject *fn)
{
    (void)self;
    _PyStackChunk *chunk;
    /* Bug: the chunk is dropped with the tasklet's stack. */
    return call_on_own_stack(fn, &chunk);
}

static PyObject *
run_fixed(PyObject *self, PyObject *fn)
{
    (void)self;
    _PyStackChunk *chunk;
    PyObject *r = call_on_own_stack(fn, &chunk);
    /* As greenlet 2.0.1: give the finished stack's chunks back. */
    PyObjectArenaAllocator alloc;
    PyObject_GetArenaAllocator(&alloc);
    while (chunk != NULL) {
        _PyStackChunk *prev = chunk->previous;
        alloc.free(alloc.ctx, chunk, chunk->size);
        chunk = prev;
    }
    return r;
}

static PyMethodDef methods[] = {
    {"run", run, METH_O, "Calls fn on its own frame stack; leaks the stack's chunk."},
    {"run_fixed", run_fixed, METH_O, "Calls fn on its own frame stack and frees it."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "tasklet", NULL, -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit_tasklet(void)
{
    return PyModule_Create(&module);
}
