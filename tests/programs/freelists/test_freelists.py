"""test_freelists.py - pytest suite over `flext` (tests/it/free_lists.rs).

FLEXT_CALLS (default 1) is how many times each test calls its function;
FLEXT_FIXED=1 calls the fixed functions instead of the leaky ones.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import flext  # noqa: E402

CALLS = int(os.environ.get("FLEXT_CALLS", "1"))
FIXED = os.environ.get("FLEXT_FIXED") == "1"


def test_pair():
    f = flext.pair_fixed if FIXED else flext.pair
    for i in range(CALLS):
        f(i, "x")


def test_scratch():
    f = flext.scratch_fixed if FIXED else flext.scratch
    for i in range(CALLS):
        f(i, "y")


def test_options():
    if not FIXED:
        for _ in range(CALLS):
            flext.options()


def test_first():
    for i in range(CALLS):
        seq = [(i, "z")]
        if FIXED:
            seq[0]
        else:
            flext.first(seq)
