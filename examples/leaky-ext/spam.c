/*
 * spam.c - leakgate example: a tiny CPython C extension module `spam` with
 * one obvious memory leak (spam.leaky) and one correct function (spam.tidy).
 *
 * Build: python3 setup.py build_ext --inplace
 * Run:   leakgate run -- python3 test_spam.py   (see README.md here)
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include <string.h>

/* spam.leaky(text) -> int: copies text into a malloc'd buffer and forgets
 * to free it. */
static PyObject *
spam_leaky(PyObject *self, PyObject *args)
{
    const char *text;
    if (!PyArg_ParseTuple(args, "s", &text))
        return NULL;
    size_t n = strlen(text);
    char *copy = malloc(n + 1); /* BUG: never freed */
    if (copy == NULL)
        return PyErr_NoMemory();
    memcpy(copy, text, n + 1);
    return PyLong_FromSize_t(n);
}

/* spam.tidy(text) -> int: same work, but frees its buffer. */
static PyObject *
spam_tidy(PyObject *self, PyObject *args)
{
    const char *text;
    if (!PyArg_ParseTuple(args, "s", &text))
        return NULL;
    size_t n = strlen(text);
    char *copy = malloc(n + 1);
    if (copy == NULL)
        return PyErr_NoMemory();
    memcpy(copy, text, n + 1);
    PyObject *result = PyLong_FromSize_t(strlen(copy));
    free(copy);
    return result;
}

static PyMethodDef spam_methods[] = {
    {"leaky", spam_leaky, METH_VARARGS, "Return len(text); leaks a copy of text."},
    {"tidy", spam_tidy, METH_VARARGS, "Return len(text); no leak."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef spam_module = {
    PyModuleDef_HEAD_INIT, "spam", "leakgate example extension.", -1, spam_methods,
};

PyMODINIT_FUNC
PyInit_spam(void)
{
    return PyModule_Create(&spam_module);
}
