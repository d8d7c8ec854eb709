/*
 * leakext.c - leakgate test program: CPython C extension module `leakext`
 * with deliberate leaks, used to check that leakgate attributes leaks to
 * the extension and not to the interpreter.
 *
 * Build: python3 setup.py build_ext --inplace   (compiled with -O0 -g)
 * Leak sites carry a trailing marker comment (an `@` followed by a name,
 * each appearing exactly once); see tests/programs/README.md.
 *   leak_malloc()          malloc(48) dropped                  -> definitely lost
 *   leak_bytes()           100-byte bytes object never DECREF'd -> definitely lost
 *                          only with PYTHONMALLOC=malloc (pymalloc hides it)
 *   error_path_leak(flag)  malloc(40); a true flag raises ValueError without
 *                          freeing                              -> definitely lost
 *   clean()                allocates and frees, no leak
 *   fill_cache()           malloc(256) into a module-level cache on the first
 *                          call only                            -> still reachable
 *   grow_registry()        malloc(32) kept in a static table at every call
 *                          (a container that grows forever)    -> still reachable
 *   read_past_end()        reads one byte past an 8-byte block  -> InvalidRead
 *   uninit_branch()        branches on a byte of a fresh malloc block
 *                                                               -> UninitCondition
 *                          (origin: the malloc, with --track-origins=yes)
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdlib.h>
#include <string.h>

static volatile char g_sink;

static __attribute__((noinline)) PyObject *
leak_malloc(PyObject *self, PyObject *args)
{
    char *p = malloc(48); /* @py_malloc */
    if (p == NULL)
        return PyErr_NoMemory();
    memset(p, 'm', 48);
    g_sink = p[47];
    p = NULL;
    Py_RETURN_NONE;
}

static __attribute__((noinline)) PyObject *
leak_bytes(PyObject *self, PyObject *args)
{
    char buf[100];
    memset(buf, 'b', sizeof buf);
    PyObject *b = PyBytes_FromStringAndSize(buf, sizeof buf); /* @py_bytes */
    if (b == NULL)
        return NULL;
    /* Missing Py_DECREF(b): the reference is dropped. */
    b = NULL;
    Py_RETURN_NONE;
}

static __attribute__((noinline)) PyObject *
error_path_leak(PyObject *self, PyObject *args)
{
    int flag = 0;
    if (!PyArg_ParseTuple(args, "p", &flag))
        return NULL;
    char *buf = malloc(40); /* @py_error_path */
    if (buf == NULL)
        return PyErr_NoMemory();
    memset(buf, 'e', 40);
    if (flag) {
        /* Bug: buf is not freed on this error path. */
        buf = NULL;
        PyErr_SetString(PyExc_ValueError, "error_path_leak: flag was set");
        return NULL;
    }
    g_sink = buf[0];
    free(buf);
    Py_RETURN_NONE;
}

static __attribute__((noinline)) PyObject *
clean(PyObject *self, PyObject *args)
{
    char *p = malloc(64);
    if (p == NULL)
        return PyErr_NoMemory();
    memset(p, 'c', 64);
    PyObject *b = PyBytes_FromStringAndSize(p, 64);
    free(p);
    if (b == NULL)
        return NULL;
    Py_DECREF(b);
    Py_RETURN_NONE;
}

static char *g_cache = NULL;

static __attribute__((noinline)) PyObject *
fill_cache(PyObject *self, PyObject *args)
{
    if (g_cache == NULL) {
        g_cache = malloc(256); /* @py_cache */
        if (g_cache == NULL)
            return PyErr_NoMemory();
        memset(g_cache, 'k', 256);
    }
    Py_RETURN_NONE;
}

static char *g_registry[4096];
static int g_registry_len = 0;

static __attribute__((noinline)) PyObject *
grow_registry(PyObject *self, PyObject *args)
{
    if (g_registry_len < 4096) {
        char *p = malloc(32); /* @py_registry */
        if (p == NULL)
            return PyErr_NoMemory();
        memset(p, 'r', 32);
        g_registry[g_registry_len++] = p;
    }
    Py_RETURN_NONE;
}

static __attribute__((noinline)) PyObject *
read_past_end(PyObject *self, PyObject *args)
{
    char *p = malloc(8);
    if (p == NULL)
        return PyErr_NoMemory();
    memset(p, 'x', 8);
    char c = p[8]; /* @py_invalid_read */
    free(p);
    return PyLong_FromLong(c == 'x');
}

static __attribute__((noinline)) PyObject *
uninit_branch(PyObject *self, PyObject *args)
{
    char *p = malloc(8); /* @py_uninit_alloc */
    if (p == NULL)
        return PyErr_NoMemory();
    int r = 0;
    if (p[3] == 'u') /* @py_uninit_use */
        r = 1;
    free(p);
    return PyLong_FromLong(r);
}

static PyMethodDef leakext_methods[] = {
    {"leak_malloc", leak_malloc, METH_NOARGS, "malloc(48) and drop it."},
    {"leak_bytes", leak_bytes, METH_NOARGS, "Create a bytes object and leak the reference."},
    {"error_path_leak", error_path_leak, METH_VARARGS,
     "Allocate a buffer; if flag is true raise ValueError and leak it."},
    {"clean", clean, METH_NOARGS, "Allocate and free; no leak."},
    {"fill_cache", fill_cache, METH_NOARGS, "Fill a module-level cache once (still reachable)."},
    {"grow_registry", grow_registry, METH_NOARGS, "Keep a new 32-byte block at every call."},
    {"read_past_end", read_past_end, METH_NOARGS, "Read one byte past an 8-byte block."},
    {"uninit_branch", uninit_branch, METH_NOARGS,
     "Branch on a byte of a fresh malloc block (uninitialised, origin: the malloc)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef leakext_module = {
    PyModuleDef_HEAD_INIT, "leakext", "leakgate test extension with deliberate leaks.", -1,
    leakext_methods,
};

PyMODINIT_FUNC
PyInit_leakext(void)
{
    return PyModule_Create(&leakext_module);
}
