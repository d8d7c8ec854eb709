"""run.py - calls each leaky function of the Cython module once."""
import leaky

leaky.leak_def(100)
leaky.call_cdef(48)
leaky.Holder().leak_cpdef(200)
print("ok")
