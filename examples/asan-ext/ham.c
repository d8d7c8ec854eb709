/*
 * ham.c - leakgate example: a CPython extension with one heap overflow and
 * one leak, for `leakgate run --engine asan` (see README.md).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include <string.h>

/* ham.checksum(data): sums the bytes into a scratch copy one byte too small. */
static PyObject *
checksum(PyObject *self, PyObject *args)
{
    const char *data;
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "y#", &data, &n))
        return NULL;
    char *copy = malloc(n);
    memcpy(copy, data, n);
    copy[n] = 0; /* heap-buffer-overflow: one byte past the block */
    long sum = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        sum += (unsigned char)copy[i];
    free(copy);
    return PyLong_FromLong(sum);
}

/* ham.label(n): a label string; the scratch buffer is never freed. */
static PyObject *
label(PyObject *self, PyObject *args)
{
    int n;
    if (!PyArg_ParseTuple(args, "i", &n))
        return NULL;
    char *buf = malloc(64); /* leaked on every call */
    snprintf(buf, 64, "item-%d", n);
    return PyUnicode_FromString(buf);
}

static PyMethodDef methods[] = {
    {"checksum", checksum, METH_VARARGS, "Sum of the bytes."},
    {"label", label, METH_VARARGS, "A label."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "ham", NULL, -1, methods};

PyMODINIT_FUNC
PyInit_ham(void)
{
    return PyModule_Create(&module);
}
