"""leakgate's ``sitecustomize``: what ``leakgate run`` loads into every Python
process it runs (the directory holding this file and ``leakgate_probe`` is
first on ``PYTHONPATH``).

Under Valgrind it first wraps CPython's arena allocator
(``leakgate_probe.arena_install()``: the interpreter's frame-stack chunks
become heap blocks Memcheck tracks; ``LEAKGATE_ARENA=keep`` leaves it).
Under a preloaded sanitizer (``leakgate run --engine lsan|asan``) it writes
the process's pid, parent and argv into the runtime's log and gives
``os._exit`` a leak check (``_leakgate_sanitizer``).
Then it registers one ``atexit`` function, which runs after every other one and
arms ``leakgate_probe.gc_exit_arm()`` (leaks of objects the garbage
collector still lists; nothing happens without Valgrind), then runs the
``sitecustomize`` that this file shadows (a venv's or the system's), so
that the user's own start-up code still runs.
"""

import os
import sys


def _leakgate_at_exit():
    try:
        import leakgate_probe

        leakgate_probe.gc_exit_arm()
    except Exception as e:  # never let the probe break the target's exit
        sys.stderr.write("leakgate_probe: %s: %s\n" % (type(e).__name__, e))


def _leakgate_arena():
    # Valgrind puts its preload objects into a traced process's LD_PRELOAD
    # (and takes them out for the children it does not trace): a cheap test
    # that keeps the probe out of processes that run natively.
    if "vgpreload" not in os.environ.get("LD_PRELOAD", ""):
        return
    if os.environ.get("LEAKGATE_ARENA") == "keep" or sys.version_info < (3, 11):
        return
    try:
        import leakgate_probe

        leakgate_probe.arena_install()
    except Exception as e:  # never let the probe break the target's start
        sys.stderr.write("leakgate_probe: %s: %s\n" % (type(e).__name__, e))


def _leakgate_sanitizer():
    # ``leakgate run --engine lsan|asan``: say who this process is in the
    # runtime's log, and give ``os._exit`` (a forked multiprocessing child's
    # way out, which skips LeakSanitizer's own exit check) a leak check.
    if os.environ.get("LEAKGATE_ENGINE") not in ("lsan", "asan"):
        return
    try:
        import leakgate_probe

        leakgate_probe.sanitizer_process_line()
        # From the start (natively it costs nothing): a leaked tuple, list,
        # dict or float carries the stack of the code that made it, not of
        # an earlier owner of its block.
        if os.environ.get("LEAKGATE_FREE_LISTS", "off") != "keep":
            leakgate_probe.free_lists_off()
        real_exit = os._exit

        def _exit(code):
            try:
                leakgate_probe.sanitizer_exit_check()
            finally:
                real_exit(code)

        os._exit = _exit
        os.register_at_fork(
            after_in_child=lambda: leakgate_probe.sanitizer_process_line(forked=True)
        )
    except Exception as e:  # never let the probe break the target's start
        sys.stderr.write("leakgate_probe: %s: %s\n" % (type(e).__name__, e))


def _leakgate_chain():
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    mod = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = mod
    spec.loader.exec_module(mod)


if os.environ.get("LEAKGATE_PROBE") == "1":
    import atexit

    _leakgate_arena()
    _leakgate_sanitizer()
    atexit.register(_leakgate_at_exit)
_leakgate_chain()
