"""test.py - drives the leakgate test extension `leakext` once per function.

Run (after building in place): python3 test.py
Expected output: "ok". Under Valgrind with PYTHONMALLOC=malloc it leaves
three definite leaks in leakext.c (leak_malloc, leak_bytes, error_path_leak);
with the default pymalloc allocator the leak_bytes one is not visible.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import leakext  # noqa: E402

leakext.leak_malloc()
leakext.leak_bytes()
try:
    leakext.error_path_leak(True)
except ValueError:
    pass
else:
    raise SystemExit("error_path_leak(True) did not raise")
leakext.clean()
print("ok")
