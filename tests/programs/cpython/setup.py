"""setup.py - builds the leakgate test extension `leakext` (CPython C API).

Usage: python3 setup.py build_ext --inplace
"""
from setuptools import Extension, setup

setup(
    name="leakext",
    version="0.0.0",
    ext_modules=[
        Extension(
            "leakext",
            sources=["leakext.c"],
            extra_compile_args=["-O0", "-g"],
        )
    ],
)
