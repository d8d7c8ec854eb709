"""setup.py - builds the leakgate example extension `spam`.

Usage: python3 setup.py build_ext --inplace
Debug info (-g) and no optimisation (-O0) give Valgrind exact line numbers.
"""
from setuptools import Extension, setup

setup(
    name="spam",
    version="0.0.0",
    ext_modules=[
        Extension("spam", sources=["spam.c"], extra_compile_args=["-O0", "-g"]),
    ],
)
