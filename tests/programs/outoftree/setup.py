"""setup.py - the leakgate test package `ootleak`, built as out-of-tree PEP 517
backends build (scikit-build-core, meson-python, aio-libs' in-tree backend):
the extension's C file is generated from `src/ootleak/_leaky.c.in` into a
temporary directory, compiled there, and the directory is deleted. The
installed object's debug info then names a source that no longer exists,
and only pip's records (`direct_url.json`, `RECORD`) say it was built from
this checkout.

Usage: pip install --no-build-isolation --no-deps [--target DIR] .
"""
import os
import shutil
import tempfile

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class OutOfTree(build_ext):
    def build_extensions(self):
        tmp = tempfile.mkdtemp(prefix="ootleak-build-")
        try:
            for ext in self.extensions:
                generated = []
                for s in ext.sources:
                    dest = os.path.join(tmp, s[: -len(".in")])
                    os.makedirs(os.path.dirname(dest), exist_ok=True)
                    shutil.copy(s, dest)
                    generated.append(dest)
                ext.sources = generated
            super().build_extensions()
        finally:
            shutil.rmtree(tmp)


setup(
    name="ootleak",
    version="0.0.0",
    packages=["ootleak"],
    package_dir={"": "src"},
    ext_modules=[
        Extension(
            "ootleak._leaky",
            sources=["src/ootleak/_leaky.c.in"],
            extra_compile_args=["-O0", "-g"],
        )
    ],
    cmdclass={"build_ext": OutOfTree},
)
