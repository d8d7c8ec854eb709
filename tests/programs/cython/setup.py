"""setup.py - builds leakgate's Cython test module `leaky` from leaky.pyx,
as C, or as C++ when LEAKY_LANGUAGE=c++.

Usage: [LEAKY_LANGUAGE=c++] python3 setup.py build_ext --inplace
"""
import os

from Cython.Build import cythonize
from setuptools import Extension, setup

language = os.environ.get("LEAKY_LANGUAGE", "c")
setup(
    name="leaky",
    version="0.0.0",
    ext_modules=cythonize(
        [
            Extension(
                "leaky",
                sources=["leaky.pyx"],
                language=language,
                extra_compile_args=["-O0", "-g"],
            )
        ],
        quiet=True,
    ),
)
