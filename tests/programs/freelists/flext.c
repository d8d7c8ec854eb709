/*
 * flext.c - leakgate test program: a CPython extension whose leaks are
 * objects that CPython recycles through its free lists (tuples, lists,
 * dicts), written the way real extensions get them wrong; used by
 * tests/it/free_lists.rs (see tests/programs/README.md).
 *
 * Build: python3 setup.py build_ext --inplace   (compiled with -O0 -g)
 *   pair(a, b)        METH_VARARGS; builds (a, b) with Py_BuildValue and
 *                     drops it: the tuple leaks. The interpreter frees its
 *                     argument tuple (also a 2-tuple) after every call, so
 *                     with free lists on the leaked block is usually the
 *                     previous call's argument tuple      -> definitely lost
 *   pair_fixed(a, b)  the same with the Py_DECREF: no leak
 *   scratch(a, b)     builds a scratch 2-tuple and Py_CLEARs it (correct),
 *                     then leaks a second 2-tuple, which free lists hand the
 *                     scratch tuple's block                 -> definitely lost
 *   scratch_fixed     the same with the second tuple released
 *   options()         leaks an empty dict (PyDict_New)      -> definitely lost
 *   first(seq)        takes seq[0] (a new reference to an object made by
 *                     Python code) and never releases it: a refcount leak
 *                     whose allocation stack is the interpreter's only
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *
pair(PyObject *self, PyObject *args)
{
    PyObject *a, *b;
    if (!PyArg_ParseTuple(args, "OO", &a, &b))
        return NULL;
    PyObject *t = Py_BuildValue("(OO)", a, b); /* @fl_pair */
    if (t == NULL)
        return NULL;
    /* BUG: t is never released */
    Py_RETURN_NONE;
}

static PyObject *
pair_fixed(PyObject *self, PyObject *args)
{
    PyObject *a, *b;
    if (!PyArg_ParseTuple(args, "OO", &a, &b))
        return NULL;
    PyObject *t = Py_BuildValue("(OO)", a, b);
    if (t == NULL)
        return NULL;
    Py_DECREF(t);
    Py_RETURN_NONE;
}

static PyObject *
scratch_impl(PyObject *args, int fixed)
{
    PyObject *a, *b;
    if (!PyArg_ParseTuple(args, "OO", &a, &b))
        return NULL;
    PyObject *tmp = PyTuple_Pack(2, b, a); /* @fl_scratch_ok */
    if (tmp == NULL)
        return NULL;
    Py_CLEAR(tmp);
    PyObject *t = PyTuple_Pack(2, a, b); /* @fl_scratch_leak */
    if (t == NULL)
        return NULL;
    if (fixed)
        Py_DECREF(t);
    Py_RETURN_NONE;
}

static PyObject *
scratch(PyObject *self, PyObject *args)
{
    return scratch_impl(args, 0);
}

static PyObject *
scratch_fixed(PyObject *self, PyObject *args)
{
    return scratch_impl(args, 1);
}

static PyObject *
options(PyObject *self, PyObject *unused)
{
    PyObject *d = PyDict_New(); /* @fl_dict */
    if (d == NULL)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
first(PyObject *self, PyObject *seq)
{
    PyObject *item = PySequence_GetItem(seq, 0);
    if (item == NULL)
        return NULL;
    /* BUG: item is never released */
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"pair", pair, METH_VARARGS, NULL},
    {"pair_fixed", pair_fixed, METH_VARARGS, NULL},
    {"scratch", scratch, METH_VARARGS, NULL},
    {"scratch_fixed", scratch_fixed, METH_VARARGS, NULL},
    {"options", options, METH_NOARGS, NULL},
    {"first", first, METH_O, NULL},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "flext", NULL, -1, methods};

PyMODINIT_FUNC
PyInit_flext(void)
{
    return PyModule_Create(&module);
}
