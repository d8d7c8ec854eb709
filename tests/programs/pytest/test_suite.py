"""test_suite.py - the pytest suite of tests/it/per_test.rs over the CPython test
extension `leakext` (tests/programs/cpython, built in place next to a copy of
this file): one test leaks at every call, one fills a module-level cache once,
one is clean, one is parametrised x3 and leaks in one parameter only.

Passes under plain python (the leakgate probe is then a no-op).
"""
import leakext


def test_leaks_per_call():
    leakext.leak_malloc()


def test_fills_cache():
    leakext.fill_cache()


def test_clean():
    leakext.clean()


def test_param(n):
    try:
        leakext.error_path_leak(n == 1)
    except ValueError:
        assert n == 1
    else:
        assert n != 1
