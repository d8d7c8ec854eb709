/* A CPython extension that allocates once at import, the way real ones do
 * (tests/it/import_time.rs; README.md here): its module definition and slot
 * array are heap-allocated in PyInit_impext and never freed, and its exec
 * slot keeps one reference too many on __version__. Each leaks once per
 * interpreter that imports the module. `fail_once()` leaks on an error path
 * called once at run time: a leak like any other. `cache()` allocates a
 * block the first time a test module calls it at collection. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include <string.h>

static int impext_exec(PyObject *m) {
    PyObject *v = PyUnicode_FromString("1.2.3"); /* @import_version */
    if (v == NULL)
        return -1;
    Py_INCREF(v); /* one reference too many */
    if (PyModule_AddObject(m, "__version__", v) < 0) {
        Py_DECREF(v);
        return -1;
    }
    return 0;
}

static PyObject *fail_once(PyObject *self, PyObject *arg) {
    char *msg = malloc(64); /* @fail_once */
    snprintf(msg, 64, "bad value: %ld", PyLong_AsLong(arg));
    PyErr_SetString(PyExc_ValueError, msg);
    return NULL; /* msg is never freed */
}

static PyObject *fine(PyObject *self, PyObject *unused) {
    char *buf = malloc(64);
    strcpy(buf, "ok");
    PyObject *r = PyUnicode_FromString(buf);
    free(buf);
    return r;
}

static PyObject *cache(PyObject *self, PyObject *unused) {
    char *table = malloc(256); /* @collection_cache */
    memset(table, 1, 256);
    Py_RETURN_NONE; /* table is dropped */
}

static PyMethodDef methods[] = {
    {"fail_once", fail_once, METH_O, NULL},
    {"fine", fine, METH_NOARGS, NULL},
    {"cache", cache, METH_NOARGS, NULL},
    {NULL, NULL, 0, NULL},
};

PyMODINIT_FUNC PyInit_impext(void) {
    /* Heap-allocated, as a Rust extension's Box::into_raw does. */
    PyModuleDef_Slot *slots = calloc(2, sizeof *slots); /* @import_slots */
    slots[0].slot = Py_mod_exec;
    slots[0].value = (void *)impext_exec;
    PyModuleDef *def = calloc(1, sizeof *def); /* @import_def */
    PyModuleDef base = {PyModuleDef_HEAD_INIT};
    memcpy(def, &base, sizeof base);
    def->m_name = "impext";
    def->m_methods = methods;
    def->m_slots = slots;
    return PyModuleDef_Init(def);
}
