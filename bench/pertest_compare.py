"""pertest_compare.py - compares the user findings of two leakgate JSON reports
(bench/pertest.sh: a configuration's run against the serial default run).

Usage: python3 bench/pertest_compare.py [--leaks] BASE.json OTHER.json
Compares, for every finding with category "user": (kind, category,
location.file, location.line, location.function, bytes, blocks, count), its
`tests` (test name and bytes, order-insensitive), `growth` and its origin
(the --track-origins stack's allocating frame and user frames, as
function:line), as multisets.
Prints "OK" and exits 0 when they are identical; else prints the findings
only in BASE ("-") and only in OTHER ("+") and exits 1. Exit 2: a report
cannot be read. `--leaks` (bench/engines.sh: a sanitizer engine against
Valgrind) compares definite and indirect leaks only, a definite leak by its
direct bytes.
Standard library only.
"""
import collections
import json
import sys


def signature(f, leaks=False):
    loc = f.get("location") or {}
    tests = tuple(sorted((t.get("test"), t.get("bytes")) for t in f.get("tests") or []))
    # The origin: its allocating function and the user's frames (the frames
    # below them are the test harness's, and a pytest-xdist worker calls
    # tests through other interpreter frames than a serial run).
    frames = f.get("origin") or []
    origin = tuple(
        f"{o.get('function')}:{o.get('line')}"
        for i, o in enumerate(frames)
        if i == 0 or o.get("user")
    )
    return (
        f.get("kind"),
        f.get("category"),
        loc.get("file"),
        loc.get("line"),
        loc.get("function"),
        # A sanitizer does not say which indirect leaks a direct one holds:
        # its definite leak's bytes are the direct bytes only.
        f.get("direct_bytes", f.get("bytes")) if leaks else f.get("bytes"),
        f.get("blocks"),
        f.get("count"),
        tests,
        f.get("growth"),
        origin,
    )


LEAKS = ("Leak_DefinitelyLost", "Leak_IndirectlyLost")


def user_findings(path, leaks=False):
    with open(path, encoding="utf-8") as fh:
        report = json.load(fh)
    return collections.Counter(
        signature(f, leaks)
        for f in report.get("findings", [])
        if f.get("category") == "user" and (not leaks or f.get("kind") in LEAKS)
    )


def show(sig):
    kind, _cat, file, line, fn, nbytes, blocks, count, tests, growth, origin = sig
    t = ", ".join(f"{name} ({b} B)" for name, b in tests) or "no tests"
    return (
        f"{kind} at {file}:{line} in {fn}: bytes={nbytes} blocks={blocks} "
        f"count={count} growth={growth}; tests: {t}; origin: {' < '.join(origin[:3]) or 'none'}"
    )


def main(argv):
    leaks = "--leaks" in argv
    argv = [a for a in argv if a != "--leaks"]
    if len(argv) != 3:
        print(next(x for x in __doc__.splitlines() if x.startswith("Usage")), file=sys.stderr)
        return 2
    try:
        base, other = user_findings(argv[1], leaks), user_findings(argv[2], leaks)
    except (OSError, ValueError) as e:
        print(f"pertest_compare: cannot read a report: {e}", file=sys.stderr)
        return 2
    if base == other:
        print("OK")
        return 0
    for sig, n in sorted((base - other).items(), key=repr):
        print(f"- {show(sig)}" + (f" (x{n})" if n > 1 else ""))
    for sig, n in sorted((other - base).items(), key=repr):
        print(f"+ {show(sig)}" + (f" (x{n})" if n > 1 else ""))
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
