from setuptools import Extension, setup

setup(
    name="gcext",
    version="0",
    ext_modules=[Extension("gcext", ["gcext.c"], extra_compile_args=["-O0", "-g"])],
)
