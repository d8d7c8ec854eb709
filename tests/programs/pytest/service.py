"""service.py - a "service" handling four requests through the CPython test
extension, with a leakgate_probe checkpoint after each (run by
tests/it/per_test.rs as `leakgate run --per-test -- python service.py`). Every
request leaks 48 bytes (leakext.leak_malloc); the first also fills the cache.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import leakext  # noqa: E402
import leakgate_probe  # noqa: E402

leakgate_probe.checkpoint("start", kind="start")
for i in range(1, 5):
    leakext.leak_malloc()
    leakext.fill_cache()
    leakgate_probe.checkpoint(f"request {i}")
print("served")
