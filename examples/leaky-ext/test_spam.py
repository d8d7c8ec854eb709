"""test_spam.py - exercises the leakgate example extension `spam`.

Run from this directory after building: python3 test_spam.py
Under leakgate, spam.leaky shows up as a leak in spam.c; spam.tidy does not.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import spam  # noqa: E402

assert spam.leaky("hello, leakgate") == 15
assert spam.tidy("hello, leakgate") == 15
print("spam ok")
