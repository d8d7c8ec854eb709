/*
 * gcext.c - leaks of objects the garbage collector tracks (tests/it/gc_leaks.rs).
 *
 * pack_pair() builds two lists and packs them into a tuple with
 * PyTuple_Pack, which takes its own references; the leaky version never
 * releases its own, so every call leaks two lists (and their floats).
 * Memcheck sees the lists as still reachable: CPython's garbage collector
 * links every tracked container in its generation lists.
 *
 * The correct functions keep objects alive on purpose: a module-level
 * cache (a C static), module state, and a dict held by a non-GC C struct.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *
make_list(double base, Py_ssize_t n)
{
    PyObject *l = PyList_New(n); /* @gc_list */
    if (l == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *f = PyFloat_FromDouble(base + (double)i); /* @gc_float */
        if (f == NULL) {
            Py_DECREF(l);
            return NULL;
        }
        PyList_SET_ITEM(l, i, f);
    }
    return l;
}

/* Leaky: PyTuple_Pack takes its own references; ours are never released. */
static PyObject *
pack_pair(PyObject *self, PyObject *args)
{
    PyObject *a = make_list(1.5, 3); /* @gc_pack */
    PyObject *b = PyList_New(0); /* @gc_empty */
    if (a == NULL || b == NULL)
        return NULL;
    return PyTuple_Pack(2, a, b);
}

/* Fixed: the same, releasing our references. */
static PyObject *
pack_pair_fixed(PyObject *self, PyObject *args)
{
    PyObject *a = make_list(1.5, 3);
    PyObject *b = PyList_New(0);
    if (a == NULL || b == NULL) {
        Py_XDECREF(a);
        Py_XDECREF(b);
        return NULL;
    }
    PyObject *t = PyTuple_Pack(2, a, b);
    Py_DECREF(a);
    Py_DECREF(b);
    return t;
}

/* Correct: a cache held by a C static for the life of the process. */
static PyObject *cache = NULL;

static PyObject *
cached(PyObject *self, PyObject *key)
{
    if (cache == NULL) {
        cache = PyDict_New();
        if (cache == NULL)
            return NULL;
    }
    PyObject *v = PyDict_GetItemWithError(cache, key);
    if (v == NULL) {
        if (PyErr_Occurred())
            return NULL;
        v = make_list(0.5, 2);
        if (v == NULL || PyDict_SetItem(cache, key, v) < 0) {
            Py_XDECREF(v);
            return NULL;
        }
        Py_DECREF(v);
    }
    return Py_NewRef(v);
}

/* Correct: a registry held by a malloc'd C struct (not an object). */
struct registry {
    long hits;
    PyObject *items; /* a list */
};
static struct registry *reg = NULL;

static PyObject *
register_item(PyObject *self, PyObject *item)
{
    if (reg == NULL) {
        reg = malloc(sizeof *reg);
        if (reg == NULL)
            return PyErr_NoMemory();
        reg->hits = 0;
        reg->items = PyList_New(0);
        if (reg->items == NULL)
            return NULL;
    }
    reg->hits++;
    if (PyList_Append(reg->items, item) < 0)
        return NULL;
    return PyLong_FromLong(reg->hits);
}

/* Module state: a list created at import, kept in the module's state. */
typedef struct {
    PyObject *seen;
} gcext_state;

static PyObject *
remember(PyObject *module, PyObject *item)
{
    gcext_state *st = PyModule_GetState(module);
    if (PyList_Append(st->seen, item) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static int
gcext_traverse(PyObject *m, visitproc visit, void *arg)
{
    gcext_state *st = PyModule_GetState(m);
    Py_VISIT(st->seen);
    return 0;
}

static int
gcext_clear(PyObject *m)
{
    gcext_state *st = PyModule_GetState(m);
    Py_CLEAR(st->seen);
    return 0;
}

static void
gcext_free(void *m)
{
    gcext_clear((PyObject *)m);
}

static PyMethodDef methods[] = {
    {"pack_pair", pack_pair, METH_NOARGS, NULL},
    {"pack_pair_fixed", pack_pair_fixed, METH_NOARGS, NULL},
    {"cached", cached, METH_O, NULL},
    {"register_item", register_item, METH_O, NULL},
    {"remember", remember, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, "gcext", NULL, sizeof(gcext_state), methods,
    NULL, gcext_traverse, gcext_clear, gcext_free,
};

PyMODINIT_FUNC
PyInit_gcext(void)
{
    PyObject *m = PyModule_Create(&moddef);
    if (m == NULL)
        return NULL;
    gcext_state *st = PyModule_GetState(m);
    st->seen = PyList_New(0);
    if (st->seen == NULL) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
