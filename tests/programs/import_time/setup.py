from setuptools import Extension, setup

setup(
    name="impext",
    version="0",
    ext_modules=[Extension("impext", ["impext.c"], extra_compile_args=["-O0", "-g"])],
)
