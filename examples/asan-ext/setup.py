"""setup.py - builds the leakgate example extension `ham` with AddressSanitizer.

Usage: python3 setup.py build_ext --inplace
-fsanitize=address instruments the extension's own code (the interpreter
stays as it is: leakgate preloads the runtime, libasan, into it);
-fsanitize-recover=address lets it go on after an error, as a Valgrind'ed
process does; -fno-omit-frame-pointer keeps stacks exact with fast
unwinding; -O0 -g give exact lines. The extension links the runtime
dynamically (gcc's default), so no other flag is needed.
"""
from setuptools import Extension, setup

SAN = ["-fsanitize=address", "-fsanitize-recover=address", "-fno-omit-frame-pointer"]

setup(
    name="ham",
    version="0.0.0",
    ext_modules=[
        Extension(
            "ham",
            sources=["ham.c"],
            extra_compile_args=["-O0", "-g"] + SAN,
            extra_link_args=SAN,
        ),
    ],
)
