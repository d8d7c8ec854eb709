"""conftest.py - parametrises test_suite.py::test_param over 0, 1, 2 (only 1
leaks), and puts the extension built next to it on sys.path."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def pytest_generate_tests(metafunc):
    if "n" in metafunc.fixturenames:
        metafunc.parametrize("n", [0, 1, 2])
