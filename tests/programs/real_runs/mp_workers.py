"""mp_workers.py - leakgate test program: leaks through the test extension
`leakext` (tests/programs/cpython) in the parent before forking
(leak_malloc, 48 bytes), in a `spawn` worker (error_path_leak, 40 bytes)
and in a `fork` worker (leak_bytes, 133 bytes with PYTHONMALLOC=malloc).
Four processes: the parent, multiprocessing's resource tracker, the spawn
worker and the fork worker. The fork worker inherits the parent's 48-byte
leak: leakgate reports it once, for the parent. Copy next to the built
extension and run: python3 mp_workers.py (prints "ok 0 0").
"""
import multiprocessing as mp
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import leakext  # noqa: E402


def spawn_work():
    try:
        leakext.error_path_leak(True)
    except ValueError:
        pass


def fork_work():
    leakext.leak_bytes()


if __name__ == "__main__":
    leakext.leak_malloc()
    s = mp.get_context("spawn").Process(target=spawn_work)
    s.start()
    s.join()
    f = mp.get_context("fork").Process(target=fork_work)
    f.start()
    f.join()
    print("ok", s.exitcode, f.exitcode)
