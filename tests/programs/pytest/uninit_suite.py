"""uninit_suite.py - the suite of `--origins auto` in tests/it/per_test.rs:
one test uses an uninitialised value (leakext.uninit_branch(): its origin
is a malloc, known only with --track-origins=yes), one leaks, one is clean.
Not named test_*.py: collected only when named on pytest's command line.
"""
import leakext


def test_clean():
    leakext.clean()


def test_uninit():
    leakext.uninit_branch()


def test_leaks():
    leakext.leak_malloc()
