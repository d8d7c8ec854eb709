"""test.py - drives the leakgate test extension `pbext` once per function.

Run (after building in place): python3 test.py
Expected output: "ok". Under Valgrind (PYTHONMALLOC=malloc) it leaves three
definite leaks in pbext.cpp (leak_new_array, Holder::Holder, throw_path_leak)
and one MismatchedFree error (mismatched_delete).
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import pbext  # noqa: E402

pbext.leak_new_array()
pbext.make_holder()
try:
    pbext.throw_path_leak()
except RuntimeError:
    pass
else:
    raise SystemExit("throw_path_leak() did not raise")
pbext.mismatched_delete()
print("ok")
