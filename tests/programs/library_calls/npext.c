/*
 * npext.c - leakgate test program: CPython extension module `npext` that
 * calls NumPy's C API, which returns a new reference the caller owns.
 *
 * Build: python3 setup.py build_ext --inplace   (needs numpy; -O0 -g)
 *   ravel_leaky(a)  PyArray_Ravel(a) never released   -> definitely lost
 *                   (the array NumPy made, at the call)
 *   ravel_fixed(a)  the same, released with Py_DECREF -> nothing
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

static PyObject *ravel_leaky(PyObject *self, PyObject *arg)
{
    if (!PyArray_Check(arg))
        return PyErr_Format(PyExc_TypeError, "an array");
    PyObject *flat = PyArray_Ravel((PyArrayObject *)arg, NPY_CORDER); /* @np_ravel */
    if (flat == NULL)
        return NULL;
    npy_intp n = PyArray_SIZE((PyArrayObject *)flat);
    return PyLong_FromSsize_t(n);
}

static PyObject *ravel_fixed(PyObject *self, PyObject *arg)
{
    if (!PyArray_Check(arg))
        return PyErr_Format(PyExc_TypeError, "an array");
    PyObject *flat = PyArray_Ravel((PyArrayObject *)arg, NPY_CORDER);
    if (flat == NULL)
        return NULL;
    npy_intp n = PyArray_SIZE((PyArrayObject *)flat);
    Py_DECREF(flat);
    return PyLong_FromSsize_t(n);
}

static PyMethodDef methods[] = {
    {"ravel_leaky", ravel_leaky, METH_O, "ravel and leak the result"},
    {"ravel_fixed", ravel_fixed, METH_O, "ravel and release the result"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "npext", NULL, -1, methods};

PyMODINIT_FUNC PyInit_npext(void)
{
    import_array();
    return PyModule_Create(&module);
}
