"""conftest.py - the larger per-test benchmark suite of bench/pertest.sh: puts
the CPython test extension `leakext`, built next to these files, on sys.path."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
