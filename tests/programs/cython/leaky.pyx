# cython: language_level=3
"""leaky.pyx - leakgate's Cython test module: one leak in a `def`, a `cdef`
and a `cpdef` function (see ../README.md, `cython/`)."""

from libc.stdlib cimport malloc
from cpython.ref cimport Py_INCREF
from cpython.bytes cimport PyBytes_FromStringAndSize


def leak_def(int n):
    """A refcount leak: one reference too many on a new bytes object."""
    b = PyBytes_FromStringAndSize(NULL, n)  # @def_leak
    Py_INCREF(b)
    return len(b)


cdef int leak_cdef(int n) except -1:
    """A block from malloc never freed."""
    cdef void *p = malloc(n)  # @cdef_leak
    if p == NULL:
        raise MemoryError()
    return 0


def call_cdef(int n):
    return leak_cdef(n)


cdef class Holder:
    cpdef int leak_cpdef(self, int n) except -1:
        """A refcount leak in a method."""
        b = PyBytes_FromStringAndSize(NULL, n)  # @cpdef_leak
        Py_INCREF(b)
        return len(b)
