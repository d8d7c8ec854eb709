"""Builds nbext with setuptools, no cmake: nanobind's own sources
(nb_combined.cpp) are compiled into the extension, with -O0 -g."""
import os

import nanobind
from setuptools import Extension, setup

nb_dir = os.path.dirname(nanobind.__file__)
ext = Extension(
    "nbext",
    sources=["nbext.cpp", os.path.join(nanobind.source_dir(), "nb_combined.cpp")],
    include_dirs=[nanobind.include_dir(), os.path.join(nb_dir, "ext", "robin_map", "include")],
    extra_compile_args=["-std=c++17", "-O0", "-g", "-fvisibility=hidden", "-fno-strict-aliasing"],
    language="c++",
)
setup(name="nbext", version="0.0.0", ext_modules=[ext])
