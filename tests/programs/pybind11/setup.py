"""setup.py - builds the leakgate test extension `pbext` (pybind11).

Usage: python3 setup.py build_ext --inplace   (requires pybind11 and setuptools)
"""
from pybind11.setup_helpers import Pybind11Extension
from setuptools import setup

setup(
    name="pbext",
    version="0.0.0",
    ext_modules=[
        Pybind11Extension(
            "pbext",
            sources=["pbext.cpp"],
            extra_compile_args=["-O0", "-g"],
        )
    ],
)
