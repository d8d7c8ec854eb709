/*
 * freelists.c - leakgate_probe's free-list switch for CPython (compiled by
 * the probe at run time against the running interpreter's headers).
 *
 * CPython keeps freed tuples, lists, dicts and floats on free lists and
 * hands them out again without calling malloc; PYTHONMALLOC=malloc does not
 * change that. Memcheck then reports a leaked object with the allocation
 * stack of whoever allocated its block first, not of the code that leaked
 * it. This shim wraps the tp_dealloc of the four exact types: the original
 * deallocator runs (it may push the object onto its free list), then the
 * object is popped straight back off (the free lists are LIFO: the next
 * PyTuple_New(n) / PyList_New(0) / PyDict_New() / PyFloat_FromDouble()
 * returns the block just pushed) and released to malloc. The free lists
 * stay empty, so every object is a fresh malloc with its true stack.
 *
 * Only the public C API is used. The wrappers run the trashcan themselves
 * (the original's own trashcan condition compares tp_dealloc with itself,
 * which no longer holds). Floats freed by the interpreter's specialised
 * arithmetic bypass tp_dealloc and can still be recycled.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static destructor orig_tuple, orig_list, orig_dict, orig_float;
static unsigned long drained;

/* Pops the block the original deallocator just pushed and frees it. */
static void
drain_gc(PyObject *o)
{
    if (o == NULL) {
        PyErr_Clear();
        return;
    }
    PyObject_GC_UnTrack(o);
    PyObject_GC_Del(o);
    drained++;
}

static void
wrap_tuple(PyObject *op)
{
    Py_ssize_t n = Py_SIZE(op);
    int exact = Py_TYPE(op) == &PyTuple_Type;
    PyObject_GC_UnTrack(op);
    Py_TRASHCAN_BEGIN(op, wrap_tuple)
    orig_tuple(op);
    if (exact && n > 0 && n < 20) {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        drain_gc(PyTuple_New(n));
        PyErr_Restore(et, ev, tb);
    }
    Py_TRASHCAN_END
}

static void
wrap_list(PyObject *op)
{
    int exact = PyList_CheckExact(op);
    PyObject_GC_UnTrack(op);
    Py_TRASHCAN_BEGIN(op, wrap_list)
    orig_list(op);
    if (exact) {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        drain_gc(PyList_New(0));
        PyErr_Restore(et, ev, tb);
    }
    Py_TRASHCAN_END
}

static void
wrap_dict(PyObject *op)
{
    int exact = PyDict_CheckExact(op);
    PyObject_GC_UnTrack(op);
    Py_TRASHCAN_BEGIN(op, wrap_dict)
    orig_dict(op);
    if (exact) {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        /* An empty dict shares the static empty keys; before 3.12 that
         * costs one count on it, which is never freed anyway. */
        drain_gc(PyDict_New());
        PyErr_Restore(et, ev, tb);
    }
    Py_TRASHCAN_END
}

static void
wrap_float(PyObject *op)
{
    int exact = PyFloat_CheckExact(op);
    orig_float(op);
    if (exact) {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        PyObject *f = PyFloat_FromDouble(0.0);
        if (f != NULL) {
            PyObject_Free(f);
            drained++;
        }
        else {
            PyErr_Clear();
        }
        PyErr_Restore(et, ev, tb);
    }
}

/* Installs the wrappers (once); returns how many types are wrapped. The
 * caller then runs a full gc.collect(), which empties the free lists. */
int
leakgate_freelists_off(void)
{
    if (orig_tuple == NULL) {
        orig_tuple = PyTuple_Type.tp_dealloc;
        PyTuple_Type.tp_dealloc = wrap_tuple;
        orig_list = PyList_Type.tp_dealloc;
        PyList_Type.tp_dealloc = wrap_list;
        orig_dict = PyDict_Type.tp_dealloc;
        PyDict_Type.tp_dealloc = wrap_dict;
        orig_float = PyFloat_Type.tp_dealloc;
        PyFloat_Type.tp_dealloc = wrap_float;
    }
    return 4;
}

/* How many recycled blocks were released to malloc so far. */
unsigned long
leakgate_freelists_drained(void)
{
    return drained;
}
