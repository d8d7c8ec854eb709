from setuptools import Extension, setup

setup(
    name="tasklet",
    version="0",
    ext_modules=[Extension("tasklet", ["tasklet.c"], extra_compile_args=["-O0", "-g"])],
)
