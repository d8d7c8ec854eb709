"""leakgate_probe: leak checkpoints for programs run under ``leakgate run``.

``checkpoint(label)`` writes a marker into Valgrind's XML report
(``VALGRIND_PRINTF``) and takes a leak snapshot right after it
(``VALGRIND_DO_CHANGED_LEAK_CHECK``): leakgate reads both, in order, and
reports which checkpoint each leak grew in. Under plain Python (no Valgrind)
every function here is a cheap no-op, so the calls can stay in the code.

No compiler and no Valgrind headers are needed: the client-request
instruction sequence of ``valgrind.h`` (x86-64, aarch64) is written into an
executable page and called through ctypes. Natively that sequence does
nothing and returns the default value, which is how ``running_on_valgrind()``
tells the two apart. Where an executable page cannot be had, a small C shim
is compiled with the system's ``cc``; failing that, the probe is a no-op and
says so once on stderr.

Use::

    import leakgate_probe
    for i in range(100):
        handle(request(i))
        leakgate_probe.checkpoint(f"request {i}")

The pytest plugin (``leakgate_probe.pytest_plugin``) takes a checkpoint
after every test; ``leakgate run -- python -m pytest`` enables it.

The first checkpoint under Valgrind also turns CPython's free lists off
(``free_lists_off()``, which compiles ``freelists.c`` with ``cc``), so that a
leaked tuple, list, dict or float carries the allocation stack of the code
that made it, not of an earlier owner of its block.

At start-up, ``arena_install()`` (called by leakgate's ``sitecustomize``
under Valgrind) compiles ``arena.c`` and wraps CPython's arena allocator, so
that the interpreter's frame-stack chunks (mmap'd by CPython 3.11 and later,
also under ``PYTHONMALLOC=malloc``) are heap blocks Memcheck tracks: a chunk
an extension leaks is lost at the extension's line.

At exit, ``gc_exit_arm()`` (registered by leakgate's ``sitecustomize``)
compiles ``gcleaks.c`` and arms its hook: at the end of the interpreter's
finalization it takes the objects that only a leaked reference keeps alive
out of the garbage collector's lists, so that Valgrind's final leak check
reports them as lost where they were made instead of still reachable.

Under a preloaded LeakSanitizer (``leakgate run --engine lsan|asan``) a
checkpoint calls ``__lsan_do_recoverable_leak_check`` instead; in a process
with one thread it does so in a forked copy of the process (a checker,
``_fork_check``), which first takes what only the collector's lists hold
out of them (``gcleaks.c``'s ``checker()``), while the process goes on.
Under ``leakgate run`` a checker waits for its turn (``_await_turn``):
leakgate checks only as many of them as it takes to tell which checkpoint
each leak appeared at, and lets the others go.
"""

import gc
import os
import signal
import sys


class _Lazy:
    """A module imported on first use: ``leakgate run`` imports this package
    into every Python process at exit (``gc_exit_arm``), where only a
    Valgrind'ed process needs ctypes; importing it costs seconds there."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        import importlib

        return getattr(importlib.import_module(self._name), attr)


ctypes = _Lazy("ctypes")
json = _Lazy("json")
platform = _Lazy("platform")

__all__ = [
    "checkpoint",
    "running_on_valgrind",
    "available",
    "marker_text",
    "free_lists_off",
    "gc_exit_arm",
    "arena_install",
    "MARKER_PREFIX",
]

__version__ = "1"

#: Every marker's text starts with this; leakgate reads the JSON after it.
MARKER_PREFIX = "leakgate-checkpoint "

# valgrind.h / memcheck.h request codes (Valgrind 3.x).
_RUNNING_ON_VALGRIND = 0x1001
_PRINTF_VALIST_BY_REF = 0x1403
_DO_LEAK_CHECK = (ord("M") << 24 | ord("C") << 16) + 6  # VG_USERREQ_TOOL_BASE('M','C') + 6
_LEAK_CHECK_FULL = 0
_LEAK_CHECK_SUMMARY = 1
_DELTA_ANY = 0
_DELTA_CHANGED = 2  # VALGRIND_DO_CHANGED_LEAK_CHECK: increases and decreases

# unsigned long request(unsigned long *args, unsigned long default)
_CODE = {
    # mov rax,rdi; mov rdx,rsi; rol rdi,3; rol rdi,13; rol rdi,61; rol rdi,51;
    # xchg rbx,rbx; mov rax,rdx; ret
    "x86_64": bytes.fromhex(
        "4889f8" "4889f2" "48c1c703" "48c1c70d" "48c1c73d" "48c1c733" "4887db" "4889d0" "c3"
    ),
    # mov x4,x0; mov x3,x1; ror x12,x12,#3; #13; #51; #61; orr x10,x10,x10;
    # mov x0,x3; ret
    "aarch64": b"".join(
        w.to_bytes(4, "little")
        for w in (
            0xAA0003E4,
            0xAA0103E3,
            0x93CC0D8C,
            0x93CC358C,
            0x93CCCD8C,
            0x93CCF58C,
            0xAA0A014A,
            0xAA0303E0,
            0xD65F03C0,
        )
    ),
}

_C_SHIM = r"""
#include "leakgate_probe.h"
unsigned long leakgate_request_export(unsigned long *a, unsigned long dflt) {
    return leakgate_request(a, dflt);
}
"""

_fn = None  # the request function, once found
_how = None  # "mmap", "cc" or None (no-op)
_keep = []  # keeps the code page (and its buffer export) alive
_warned = False
_seq = 0


def _arch():
    m = platform.machine().lower()
    if m in ("x86_64", "amd64"):
        return "x86_64"
    if m in ("aarch64", "arm64"):
        return "aarch64"
    return None


def _from_mmap(code):
    import mmap

    size = mmap.PAGESIZE
    prot_rwx = mmap.PROT_READ | mmap.PROT_WRITE | getattr(mmap, "PROT_EXEC", 4)
    try:
        page = mmap.mmap(-1, size, prot=prot_rwx)
        page.write(code)
    except (OSError, ValueError, PermissionError):
        # W^X systems: write, then make it executable.
        page = mmap.mmap(-1, size, prot=mmap.PROT_READ | mmap.PROT_WRITE)
        page.write(code)
        buf = ctypes.c_char.from_buffer(page)
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        if libc.mprotect(ctypes.addressof(buf), size, mmap.PROT_READ | 4) != 0:
            raise OSError(ctypes.get_errno(), "mprotect")
        _keep.extend([page, buf])
        return ctypes.CFUNCTYPE(ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t)(
            ctypes.addressof(buf)
        )
    buf = ctypes.c_char.from_buffer(page)
    _keep.extend([page, buf])
    return ctypes.CFUNCTYPE(ctypes.c_size_t, ctypes.c_void_p, ctypes.c_size_t)(
        ctypes.addressof(buf)
    )


def _from_cc():
    import shutil
    import subprocess
    import tempfile

    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise OSError("no C compiler")
    d = tempfile.mkdtemp(prefix="leakgate-probe-")
    src = os.path.join(d, "shim.c")
    lib = os.path.join(d, "leakgate_shim.so")
    with open(src, "w") as f:
        f.write(_C_SHIM)
    subprocess.run(
        [cc, "-shared", "-fPIC", "-O1", "-I", os.path.dirname(os.path.abspath(__file__)), "-o", lib, src],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    dll = ctypes.CDLL(lib)
    _keep.append(dll)
    f = dll.leakgate_request_export
    f.restype = ctypes.c_size_t
    f.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    return f


def _request_fn():
    global _fn, _how, _warned
    if _fn is not None or _how == "none":
        return _fn
    arch = _arch()
    if arch is not None and os.environ.get("LEAKGATE_PROBE_NO_MMAP") != "1":
        try:
            _fn, _how = _from_mmap(_CODE[arch]), "mmap"
            return _fn
        except Exception:
            pass
    try:
        _fn, _how = _from_cc(), "cc"
        return _fn
    except Exception:
        pass
    _how = "none"
    if not _warned and os.environ.get("LEAKGATE_PROBE") == "1":
        _warned = True
        sys.stderr.write(
            "leakgate_probe: no way to issue Valgrind client requests here "
            "(no executable memory, no C compiler); checkpoints are ignored\n"
        )
    return None


def _request(req, a1=0, a2=0, a3=0, a4=0, a5=0, default=0):
    fn = _request_fn()
    if fn is None:
        return default
    args = (ctypes.c_size_t * 6)(req, a1, a2, a3, a4, a5)
    return fn(ctypes.addressof(args), default)


_on_valgrind = None


def running_on_valgrind():
    """How many Valgrinds this process runs under (0: none)."""
    global _on_valgrind
    if _on_valgrind is None:
        _on_valgrind = int(_request(_RUNNING_ON_VALGRIND, default=0))
    return _on_valgrind


#: What ends a checkpoint's report in a sanitizer's log (``--engine lsan``).
SANITIZER_END = "leakgate-checkpoint-end"
#: What a process line in a sanitizer's log starts with (pid, ppid, argv).
PROCESS_PREFIX = "leakgate-process "
#: Where a checkpoint's report would be in its process's log when a forked
#: checker wrote it (``{"seq"}`` after it); leakgate puts the report there.
FORKED_PREFIX = "leakgate-checkpoint-forked "
#: What a checker's log starts with (``{"parent", "seq"}`` after it).
CHECKER_PREFIX = "leakgate-checker "
#: A checker's line when a full collection would have freed objects at its
#: checkpoint, which the process collected only young objects for, and the
#: checker could not collect fully in its own copy (``_collect_in_copy``;
#: ``{"seq", "objects"}``; -1: not known): leakgate runs the target again
#: with full collections (``LEAKGATE_COLLECT=full``).
GARBAGE_PREFIX = "leakgate-garbage "
#: A checker's line when it collected fully in its own copy instead
#: (``_collect_in_copy``; ``{"seq", "objects"}``): its check is the one a
#: full collection at the checkpoint gives, and nothing runs again.
GARBAGE_COLLECTED_PREFIX = "leakgate-garbage-collected "

_os_exit = os._exit  # the real one: the sanitizer engines wrap os._exit
_checkers = []  # the read ends of the pipes the running checkers hold open
#: The signals leakgate gives a waiting checker its turn with
#: (``_await_turn``): SIGUSR1 check, SIGUSR2 end without checking.
_TURN_SIGNALS = (signal.SIGUSR1, signal.SIGUSR2)
#: Whether checkers wait for their turn: leakgate (``run::turns``) says so.
_TURNS = os.environ.get("LEAKGATE_CHECKER_TURNS") == "1"
#: How long a checker waits for its turn before it checks anyway (seconds).
_TURN_WAIT = 60
#: How many checkers may be alive at once (beside the process itself):
#: more where most of them only wait (a waiting copy costs memory, not time).
_MAX_CHECKERS = 12 if _TURNS else 4
_checker_wait_at_exit = False  # checker_wait registered with atexit
_in_checker_fork = False  # set around the checker's fork (no process line)

_san = None  # (line, check) of the preloaded sanitizer runtime; False: none


def _sanitizer():
    """The preloaded sanitizer runtime's interface (``leakgate run --engine
    lsan|asan``): ``(line, check)``, where ``line(bytes)`` writes a line into
    the runtime's log (``__sanitizer_report_error_summary``) and ``check()``
    reports every leak found so far and lets the process go on
    (``__lsan_do_recoverable_leak_check``). ``None`` without one."""
    global _san
    if _san is None:
        _san = False
        if os.environ.get("LEAKGATE_ENGINE") in ("lsan", "asan"):
            try:
                lib = ctypes.CDLL(None)
                line = lib.__sanitizer_report_error_summary
                line.argtypes = [ctypes.c_char_p]
                line.restype = None
                check = lib.__lsan_do_recoverable_leak_check
                check.restype = ctypes.c_int
                _san = (line, check)
            except (OSError, AttributeError):
                pass
    return _san or None


def sanitizer_process_line(forked=False):
    """Writes this process's pid, parent and argv into the sanitizer's log
    (what Valgrind's XML says of every process); no-op without one."""
    san = _sanitizer()
    if san is None or _in_checker_fork:
        return
    # The whole command line, interpreter first, as Valgrind's <argv> has it:
    # sys.argv lacks the interpreter, and while ``python -m pytest`` starts
    # it reads ``['-m', ...]`` without the module's name.
    argv = list(getattr(sys, "orig_argv", None) or [sys.executable] + sys.argv)
    d = {"pid": os.getpid(), "ppid": os.getppid(), "argv": argv, "forked": forked}
    text = PROCESS_PREFIX + json.dumps(d, ensure_ascii=True, separators=(",", ":"))
    san[0](text.replace("%", "\\u0025").encode("ascii"))


def sanitizer_exit_check():
    """The leak check of a process that ends without ``exit()`` (``os._exit``
    in a forked multiprocessing child): LeakSanitizer's own runs from
    ``atexit`` and never sees it."""
    san = _sanitizer()
    if san is None:
        return
    checker_wait()
    sanitizer_process_line()
    gc.collect()
    san[1]()


def available():
    """Whether checkpoints do anything here (under Valgrind, or a preloaded
    LeakSanitizer)."""
    return running_on_valgrind() > 0 or _sanitizer() is not None


def marker_text(
    label, kind="checkpoint", rep=None, of=None, seq=None, freelists=None, index=None
):
    """The marker's text: the prefix and one line of JSON, XML-safe and
    free of ``%`` (it is Valgrind's printf format)."""
    d = {"v": 1, "kind": kind, "label": str(label)[:1000]}
    if seq is not None:
        d["seq"] = seq
    if rep is not None:
        d["rep"] = rep
    if of is not None:
        d["of"] = of
    if index is not None:
        d["index"] = int(index)
    if freelists is not None:
        d["freelists"] = str(freelists)[:300]
    s = json.dumps(d, ensure_ascii=True, separators=(",", ":"))
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("%", "\\u0025")):
        s = s.replace(ch, esc)
    return MARKER_PREFIX + s + "\n"


def _printf(text):
    fmt = ctypes.create_string_buffer(text.encode("ascii"))
    dummy = (ctypes.c_char * 64)()  # a va_list nobody reads: no % in fmt
    _request(_PRINTF_VALIST_BY_REF, ctypes.addressof(fmt), ctypes.addressof(dummy))


_freelists = None  # "off", or why they stay on; None: not tried yet


def _cache_dir():
    """Where compiled shims are kept between runs: ``LEAKGATE_CACHE_DIR``,
    else ``$XDG_CACHE_HOME/leakgate``, else ``~/.cache/leakgate``."""
    d = os.environ.get("LEAKGATE_CACHE_DIR")
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "leakgate")
    return os.path.join(d, "probe")


def _compile_shim(name):
    """Compiles ``name``.c of this package against the running
    interpreter's headers; returns the library's path. The library is kept
    in the cache directory (``_cache_dir()``), keyed by the source, the
    compiler and the interpreter, so that later processes and runs only
    load it; where the cache cannot be written it is built in a temporary
    directory (removed by ``_load_shim`` once loaded)."""
    import sysconfig
    import zlib

    paths = sysconfig.get_paths()
    incs = {paths.get("include"), paths.get("platinclude"), sysconfig.get_config_var("INCLUDEPY")}
    incs = sorted(i for i in incs if i)
    here = os.path.dirname(os.path.abspath(__file__))
    src = os.path.join(here, name + ".c")
    # The key: the sources, $CC, the interpreter and its headers (two CRC-32s;
    # hashlib would load OpenSSL into every process at exit).
    key = "\0".join([sys.version, sys.executable, os.environ.get("CC", "")] + incs).encode(
        errors="replace"
    )
    for f in (src, os.path.join(here, "leakgate_probe.h")):
        with open(f, "rb") as fh:
            key += fh.read()
    digest = "%08x%08x" % (zlib.crc32(key), zlib.crc32(key[::-1]))
    # "libpython" in the name: leakgate counts the shim's frames as the interpreter's.
    lib_name = "libpython-leakgate-%s-%s.so" % (name, digest)
    cache = _cache_dir()
    cached = os.path.join(cache, lib_name)
    if os.path.exists(cached):
        return cached
    import shutil
    import subprocess

    cc = os.environ.get("CC", "").split() or [shutil.which("cc") or shutil.which("gcc") or ""]
    if not cc[0]:
        raise OSError("no C compiler")
    if not any(os.path.exists(os.path.join(i, "Python.h")) for i in incs):
        raise OSError("no Python.h (install the Python development headers)")
    try:
        os.makedirs(cache, exist_ok=True)
        out, final = os.path.join(cache, "%s.%d.tmp" % (lib_name, os.getpid())), cached
    except OSError:
        import tempfile

        out = final = os.path.join(tempfile.mkdtemp(prefix="leakgate-shim-"), lib_name)
    cmd = cc + ["-shared", "-fPIC", "-O1", "-g", "-I" + here] + ["-I" + i for i in incs]
    # The compiler runs natively: without a preloaded sanitizer runtime
    # (``--engine lsan``), whose leak reports of cc1 would be noise.
    env = dict(os.environ)
    if env.get("LEAKGATE_ENGINE") in ("lsan", "asan"):
        for k in ("LD_PRELOAD", "LSAN_OPTIONS", "ASAN_OPTIONS"):
            env.pop(k, None)
    r = subprocess.run(
        cmd + ["-o", out, src], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env
    )
    if r.returncode != 0:
        if out != final:
            try:
                os.unlink(out)
            except OSError:
                pass
        raise OSError("cc failed: " + r.stdout.decode(errors="replace").strip()[-200:])
    if out != final:
        os.replace(out, final)
    return final


def _load_shim(name):
    """``_compile_shim(name)``, loaded (with the GIL held during calls)."""
    path = _compile_shim(name)
    try:
        lib = ctypes.PyDLL(path)
    finally:
        _drop_temp(path)
    _keep.append(lib)
    return lib


def _drop_temp(path):
    """Removes a shim built outside the cache once loaded (it stays mapped)."""
    if not path.startswith(_cache_dir()):
        import shutil

        shutil.rmtree(os.path.dirname(path), ignore_errors=True)


def free_lists_off():
    """Stops CPython from recycling tuples, lists, dicts and floats through
    its free lists (``freelists.c``), so that every such object is a fresh
    malloc and Memcheck reports a leaked one with the stack of the code that
    made it. Runs once (later calls return the first answer); returns "off"
    or the reason they stay on. ``LEAKGATE_FREE_LISTS=keep`` keeps them."""
    global _freelists
    if _freelists is not None:
        return _freelists
    if os.environ.get("LEAKGATE_FREE_LISTS", "off") == "keep":
        _freelists = "kept (LEAKGATE_FREE_LISTS=keep)"
        return _freelists
    if sys.implementation.name != "cpython":
        _freelists = "kept (not CPython)"
        return _freelists
    import sysconfig

    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        _freelists = "kept (free-threaded build)"
        return _freelists
    try:
        lib = _load_shim("freelists")
        lib.leakgate_freelists_off.restype = ctypes.c_int
        lib.leakgate_freelists_off()
        _freelists = "off"
    except Exception as e:  # no compiler, no headers: free lists stay on
        _freelists = "kept (%s)" % (str(e).splitlines() or [type(e).__name__])[0][:200]
        sys.stderr.write("leakgate_probe: CPython free lists stay on: %s\n" % _freelists)
    gc.collect()  # a full collection empties the free lists
    return _freelists


def checkpoint(label, kind="checkpoint", rep=None, of=None, collect=True, index=None):
    """Marks a point of the run and takes a leak snapshot there.

    leakgate attributes the blocks lost (or still reachable) since the
    previous checkpoint to ``label``. ``collect`` runs the garbage collector
    first, so that objects only waiting for it are not counted (at a
    test's checkpoint whose check runs in a forked checker, the young
    generations only: the checker tells whether a full collection would
    have freed more, ``_fork_check``). A ``start``
    checkpoint takes a silent baseline instead (a summary leak check: the
    heap as it is then is not listed, later snapshots show what changed
    since). The first call also turns CPython's free lists off
    (``free_lists_off()``). ``index`` is a pytest test's position in the
    collected session (the same in every pytest-xdist worker), so that
    leakgate lists the tests of parallel workers in the order of a serial
    run. Returns whether a snapshot was taken (False
    without Valgrind)."""
    global _seq
    if not available():
        return False
    first = _freelists is None
    if first:
        free_lists_off()
    san = _sanitizer()
    forked = san is not None and _forked_checks()
    young = collect and forked and kind == "test" and _young_collect()
    if collect:
        # A test's checkpoint with a forked check collects the young
        # generations only (a full collection writes to every tracked
        # object, each page a copy while checkers share it: 12-15 ms); the
        # checker tells whether a full one would have freed more, and then
        # collects fully in its own copy (``_collect_in_copy``).
        gc.collect(1 if young else 2)
    _seq += 1
    if san is not None:
        # LeakSanitizer reports every leak found so far: the marker before
        # the report, an end line after it, in the same log (leakgate takes
        # the difference between consecutive reports).
        text = marker_text(
            label,
            kind=kind,
            rep=rep,
            of=of,
            seq=_seq,
            freelists=_freelists if first else None,
            index=index,
        )
        text = text.rstrip("\n").encode("ascii")
        if forked and _fork_check(san, text, young, kind):
            return True
        if young:
            gc.collect()  # no checker: the check runs here, after a full collection
        san[0](text)
        san[1]()
        san[0](SANITIZER_END.encode("ascii"))
        return True
    _printf(
        marker_text(
            label,
            kind=kind,
            rep=rep,
            of=of,
            seq=_seq,
            freelists=_freelists if first else None,
            index=index,
        )
    )
    if kind == "start":
        _request(_DO_LEAK_CHECK, _LEAK_CHECK_SUMMARY, _DELTA_ANY)
    else:
        _request(_DO_LEAK_CHECK, _LEAK_CHECK_FULL, _DELTA_CHANGED)
    return True


def _young_collect():
    """Whether a test's checkpoint with a forked check may collect only
    the young generations: the checker can tell whether a full collection
    would have freed more (``gcleaks.c``), and ``LEAKGATE_COLLECT`` is not
    ``full`` (leakgate's run again after a checker said so)."""
    return os.environ.get("LEAKGATE_COLLECT") != "full" and _gc_module() is not None


def _forked_checks():
    """Whether a checkpoint's leak check may run in a forked copy of this
    process while the process goes on with the next test: only when it has
    one thread (a copy holds the heap, globals, stack and registers of the
    forking thread alone: another thread's stack would be missing from what
    the check scans). ``LEAKGATE_FORKED_CHECKS=0`` keeps every check in the
    process."""
    if os.environ.get("LEAKGATE_FORKED_CHECKS", "1") == "0" or not hasattr(os, "fork"):
        return False
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


def checker_wait(keep=0):
    """Waits until no more than ``keep`` of the running checkers
    (``_fork_check``) are left, the oldest first; ``checker_wait()`` waits
    for all."""
    while len(_checkers) > keep:
        r = _checkers.pop(0)
        try:
            while os.read(r, 64):  # EOF: the checker ended
                pass
        except OSError:
            pass
        os.close(r)


def _fork_check(san, marker, young=False, kind="checkpoint"):
    """A checkpoint whose leak check runs in a forked copy of the process
    (a checker) while the process goes on: the copy holds the heap as it is
    at this point, so its report is the one an in-process check would print
    here. No ``os.wait()`` of the target's may see the checker: it is made a
    sibling of this process (``clone(CLONE_PARENT)``, ``_sibling_fork``)
    where the parent is leakgate, the subreaper, and a grandchild elsewhere
    (its parent exits at once and is waited for here); leakgate reaps it.
    Its report goes into its own log (``leakgate-checker {parent, seq}``,
    the marker, the report, the end line); this process's log gets the
    marker and a ``leakgate-checkpoint-forked`` line where the report
    belongs, and leakgate puts it there. At most ``_MAX_CHECKERS`` run at
    once (the oldest is waited for first), and the process's end waits for
    all unless leakgate does (``_checkers_at_exit``). Returns False, having
    forked nothing, when the first fork fails (the check then runs in the
    process). ``young``: the process collected only the young generations;
    the checker writes a ``GARBAGE_PREFIX`` line when a full collection
    would have freed objects. Under ``leakgate run`` the checker waits for
    its turn first (``_await_turn``), and may end without checking: leakgate
    then gives its checkpoint the report of an earlier one, which (as the
    one of a later checkpoint) found the same leaks."""
    global _in_checker_fork, _checker_wait_at_exit
    checker_wait(_MAX_CHECKERS - 1)
    gc_mod = _gc_module()
    about = {"parent": os.getpid(), "seq": _seq}
    if _TURNS:
        about.update(kind=kind, waits=True)
    head = (CHECKER_PREFIX + json.dumps(about)).encode("ascii")
    r, w = os.pipe()
    _in_checker_fork = True
    try:
        pid = _sibling_fork()
        sibling = pid is not None
        if not sibling:
            pid = os.fork()
    except OSError:
        os.close(r)
        os.close(w)
        return False
    finally:
        _in_checker_fork = False
    if pid == 0:
        _in_checker_fork = True  # the finally above reset it here too
        try:
            os.close(r)
            if sibling or os.fork() == 0:
                if _TURNS:
                    # Blocked before leakgate can know of this checker (the
                    # head line), so that no turn is lost.
                    signal.pthread_sigmask(signal.SIG_BLOCK, _TURN_SIGNALS)
                san[0](head)
                if _TURNS and not _await_turn():
                    return  # (the finally below ends this copy)
                san[0](marker)
                garbage = -1
                collected = False
                if gc_mod is not None:
                    # This copy ends after its check: what only the
                    # collector's lists hold may leave them (gcleaks.c).
                    try:
                        if young:
                            garbage = gc_mod.pending()
                            collected = garbage > 0 and _collect_in_copy(gc_mod)
                        gc_mod.checker(False)
                    except Exception:  # the check runs all the same
                        pass
                if collected:
                    line = GARBAGE_COLLECTED_PREFIX + json.dumps({"seq": _seq, "objects": garbage})
                    san[0](line.encode("ascii"))
                elif young and garbage != 0:
                    line = GARBAGE_PREFIX + json.dumps({"seq": _seq, "objects": garbage})
                    san[0](line.encode("ascii"))
                san[1]()
                san[0](SANITIZER_END.encode("ascii"))
        finally:
            _os_exit(0)
    os.close(w)
    if not sibling:
        os.waitpid(pid, 0)
    # Should the second fork have failed, the pipe is at EOF at once and
    # the placeholder, left without a report, makes leakgate call this
    # process incomplete.
    _checkers.append(r)
    san[0](marker)
    san[0]((FORKED_PREFIX + json.dumps({"seq": _seq})).encode("ascii"))
    if not _checker_wait_at_exit:
        import atexit

        atexit.register(_checkers_at_exit)
        _checker_wait_at_exit = True
    return True


def _log_fd():
    """The descriptor of this process's sanitizer log (``log_path`` of the
    runtime's options, which leakgate sets last, plus ``.PID``), open once
    something was written to it; None when not found."""
    name = "ASAN_OPTIONS" if os.environ.get("LEAKGATE_ENGINE") == "asan" else "LSAN_OPTIONS"
    path = None
    for opt in os.environ.get(name, "").replace(" ", ":").split(":"):
        if opt.startswith("log_path="):
            path = opt[len("log_path=") :]
    if not path:
        return None
    want = os.path.realpath("%s.%d" % (path, os.getpid()))
    try:
        fds = os.listdir("/proc/self/fd")
    except OSError:
        return None
    for fd in fds:
        try:
            if os.readlink("/proc/self/fd/" + fd) == want:
                return int(fd)
        except (OSError, ValueError):
            pass
    return None


def _collect_in_copy(gc_mod):
    """A full garbage collection in a checker's copy of the process, when
    its checkpoint collected only the young generations and a full one
    would free more: what the garbage held may have been lost in the test,
    and this check is then the one a full collection at the checkpoint
    would give. First the sandbox (``gcleaks.c``, ``sandbox()``): every
    system call that reaches outside the copy (writes but to the log,
    deleting, sending, signalling other processes) fails from then on, so
    the finalizers the collection runs change nothing the process will do
    again itself. A finalizer that hangs ends the copy after 120 s (the
    process is then incomplete, never passed). Returns False, having done
    nothing, where the sandbox cannot be set up (leakgate then runs the
    target again with full collections) or ``LEAKGATE_CHECKER_COLLECT=0``."""
    if os.environ.get("LEAKGATE_CHECKER_COLLECT", "1") == "0":
        return False
    fd = _log_fd()
    if fd is None:
        return False
    try:
        gc_mod.sandbox(fd)
    except (OSError, AttributeError):
        return False
    try:
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
        signal.alarm(120)
    except (OSError, ValueError):
        pass
    del gc.callbacks[:]  # the process's own, not this copy's business
    gc.collect()
    return True


def _await_turn():
    """A waiting checker's turn (``run::turns`` in leakgate): True to check
    (SIGUSR1), False to end without a report (SIGUSR2: leakgate has what
    this checkpoint's report would say, or is gone). After ``_TURN_WAIT``
    seconds without a word the checker checks anyway."""
    reaper = os.environ.get("LEAKGATE_REAPER", "")
    for _ in range(_TURN_WAIT):
        info = signal.sigtimedwait(_TURN_SIGNALS, 1.0)
        if info is not None:
            return info.si_signo == signal.SIGUSR1
        if reaper.isdigit():
            try:
                os.kill(int(reaper), 0)
            except ProcessLookupError:
                return False  # nobody will read the report
            except OSError:
                pass
    return True


def _checkers_at_exit():
    """The process's end waits for its checkers, unless leakgate does: when
    they are its siblings in the group it leads (leakgate waits for the
    whole group), the interpreter's finalisation and LeakSanitizer's exit
    check run while the last checks finish."""
    if _clone and os.getpgrp() == os.getpid() and _is_reapers_child():
        return
    checker_wait()


def _is_reapers_child():
    """Whether this process's parent is leakgate (``LEAKGATE_REAPER``)."""
    return os.environ.get("LEAKGATE_REAPER") == str(os.getppid())


#: clone(2)'s system call number, where ``_sibling_fork`` knows it.
_CLONE_NR = {"x86_64": 56, "aarch64": 220}
_CLONE_PARENT = 0x00008000
_SIGCHLD = 17
_clone = None  # (the syscall function, clone's number); False: not usable


def _sibling_fork():
    """Forks a copy that is this process's sibling, ``clone(CLONE_PARENT |
    SIGCHLD)``: one copy where ``_fork_check`` would make two (a child that
    forks the checker and exits, waited for here). Only where this
    process's parent is leakgate (``LEAKGATE_REAPER``), which reaps it,
    and on one thread (``_forked_checks``). The copy skips the fork
    handlers of libc and CPython: it only writes its report and exits.
    Returns the pid (0 in the copy), or None where the checker is to be a
    grandchild instead (``LEAKGATE_SIBLING_CHECKERS=0`` too, and from the
    first failed clone on: a seccomp filter, say)."""
    global _clone
    if not _is_reapers_child():
        return None
    if os.environ.get("LEAKGATE_SIBLING_CHECKERS", "1") == "0":
        return None
    if _clone is None:
        _clone = False
        try:
            nr = _CLONE_NR.get(os.uname().machine)
            if nr is not None:
                f = ctypes.PyDLL(None).syscall  # the GIL stays held
                f.restype = ctypes.c_long
                f.argtypes = [ctypes.c_long, ctypes.c_ulong] + [ctypes.c_void_p] * 4
                _clone = (f, nr)
        except (OSError, AttributeError):
            pass
    if not _clone:
        return None
    f, nr = _clone
    pid = f(nr, _CLONE_PARENT | _SIGCHLD, None, None, None, None)
    if pid < 0:
        _clone = False
        return None
    return pid


_gc_exit = None  # "armed", or why not; None: not tried yet
_gc_mod = None  # the loaded gcleaks.c, False when it cannot be; None: not tried


def _gc_module():
    """``gcleaks.c`` loaded as ``_leakgate_gc`` (the exit hook's and the
    checkers' shim), or None where it cannot be (why is said once, by
    ``gc_exit_arm``): not CPython 3.9+, a free-threaded build,
    ``LEAKGATE_GC=keep``, no compiler or headers."""
    global _gc_mod
    if _gc_mod is None:
        _gc_mod = False
        if (
            os.environ.get("LEAKGATE_GC", "out") != "keep"
            and sys.implementation.name == "cpython"
            and sys.version_info >= (3, 9)
        ):
            import sysconfig

            if not sysconfig.get_config_var("Py_GIL_DISABLED"):
                try:
                    _gc_mod = _load_extension("gcleaks", "_leakgate_gc")
                except Exception:
                    pass
    return _gc_mod or None


def gc_exit_arm():
    """Arms the exit hook of ``gcleaks.c``: at the end of the interpreter's
    finalization, objects the garbage collector still lists but that only a
    leaked reference keeps alive are taken out of its lists, so that
    Valgrind's final leak check reports them as lost at the line that made
    them (not as still reachable through the collector's links). Which ones,
    Memcheck decides (quick leak checks): nothing held by a C static, module
    state or any other pointer is taken out. Runs once; returns "armed" or
    the reason it is not. ``LEAKGATE_GC=keep`` leaves the lists alone."""
    global _gc_exit
    if _gc_exit is not None:
        return _gc_exit
    if os.environ.get("LEAKGATE_GC", "out") == "keep":
        _gc_exit = "kept (LEAKGATE_GC=keep)"
        return _gc_exit
    if sys.implementation.name != "cpython" or sys.version_info < (3, 9):
        _gc_exit = "kept (not CPython 3.9 or later)"
        return _gc_exit
    import sysconfig

    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        _gc_exit = "kept (free-threaded build)"
        return _gc_exit
    try:
        mod = _gc_module()
        _gc_exit = mod.arm() if mod is not None else _load_extension("gcleaks", "_leakgate_gc").arm()
    except Exception as e:  # no compiler, no internal headers: the lists stay as they are
        _gc_exit = "kept (%s)" % (str(e).splitlines() or [type(e).__name__])[0][:200]
    if _gc_exit != "armed" and not _gc_exit.startswith("kept (not under"):
        sys.stderr.write(
            "leakgate_probe: leaks of objects the garbage collector lists stay hidden: %s\n"
            % _gc_exit
        )
    return _gc_exit


_arena = None  # "installed", or why not; None: not tried yet


def _load_extension(name, module):
    """Compiles ``name``.c (``_compile_shim``) and loads it as the extension
    module ``module`` (its ``PyInit`` names it; no ctypes needed)."""
    import importlib.machinery
    import importlib.util

    path = _compile_shim(name)
    loader = importlib.machinery.ExtensionFileLoader(module, path)
    spec = importlib.util.spec_from_file_location(module, path, loader=loader)
    mod = importlib.util.module_from_spec(spec)
    try:
        loader.exec_module(mod)
    finally:
        _drop_temp(path)
    _keep.append(mod)
    return mod


def arena_install():
    """Wraps CPython's arena allocator (``arena.c``): from then on the
    chunks of the interpreter's frame stacks (and pymalloc's arenas) are
    heap blocks, so that Memcheck reports a chunk an extension leaks at the
    extension's line; without it CPython 3.11+ mmaps them and a leaked one
    has no loss record at all. Chunks made before are left as they are.
    Runs once; returns "installed" or the reason it is not.
    ``LEAKGATE_ARENA=keep`` leaves the allocator alone."""
    global _arena
    if _arena is not None:
        return _arena
    if os.environ.get("LEAKGATE_ARENA", "heap") == "keep":
        _arena = "kept (LEAKGATE_ARENA=keep)"
        return _arena
    if sys.implementation.name != "cpython" or sys.version_info < (3, 11):
        _arena = "kept (not CPython 3.11 or later)"
        return _arena
    import sysconfig

    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        _arena = "kept (free-threaded build)"
        return _arena
    try:
        _arena = _load_extension("arena", "_leakgate_arena").install()
    except Exception as e:  # no compiler, no headers: the allocator stays
        _arena = "kept (%s)" % (str(e).splitlines() or [type(e).__name__])[0][:200]
    # Loading the shim ran Python code (imports, a compile) that left
    # blocks on CPython's free lists; the user's first tuples, lists and
    # dicts would reuse them and carry their stacks. A full collection
    # empties the free lists, as they would be without the probe.
    gc.collect()
    if _arena != "installed" and not _arena.startswith("kept (not under"):
        sys.stderr.write(
            "leakgate_probe: leaks of the interpreter's frame-stack chunks stay hidden: %s\n"
            % _arena
        )
    return _arena


def arena_stats():
    """What the arena wrapper did: (blocks made, freed, frees passed to the
    original allocator, blocks live); None when it is not installed."""
    mod = sys.modules.get("_leakgate_arena")
    return mod.stats() if mod is not None and _arena == "installed" else None
