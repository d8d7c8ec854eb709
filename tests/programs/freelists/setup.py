"""setup.py - builds the leakgate free-list test extension `flext`.

Usage: python3 setup.py build_ext --inplace
"""
from setuptools import Extension, setup

setup(
    name="flext",
    version="0.0.0",
    ext_modules=[Extension("flext", sources=["flext.c"], extra_compile_args=["-O0", "-g"])],
)
