"""setup.py - builds the leakgate test extension `npext` (NumPy's C API).

Usage: python3 setup.py build_ext --inplace   (requires numpy and setuptools)
"""
import numpy
from setuptools import Extension, setup

setup(
    name="npext",
    version="0.0.0",
    ext_modules=[
        Extension(
            "npext",
            sources=["npext.c"],
            include_dirs=[numpy.get_include()],
            extra_compile_args=["-O0", "-g"],
        )
    ],
)
