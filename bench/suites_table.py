"""suites_table.py - the markdown table of bench/suites.sh's results.

Usage: python3 bench/suites_table.py RESULTS_DIR [SUITE...]
Reads RESULTS_DIR/SUITE.MEASURE.RUN.{time,log,json} (MEASURE: native,
memcheck, lsan, valgrind) and prints one row per suite:
  tests:            passed + failed + skipped + xfailed + xpassed + errors of
                    the native run (pytest's summary line; failures noted);
  native s:         the native run's wall seconds (median over runs);
  lsan s:           `leakgate run --engine lsan`, and its ratio to native;
  valgrind s:       `leakgate run` (Valgrind), and its ratio to plain Memcheck;
  plain memcheck s: `valgrind --leak-check=full --xml=yes python -m pytest`;
  re-runs:          what leakgate ran again and how long each re-run took
                    (the report's notes: "ran again ...", "re-ran ...");
  checks:           checkpoint checks that ran / checkpoints (the report's
                    environment line "checker turns: N ... ran, M did not",
                    else per_test.checkpoints);
  peak MB:          /usr/bin/time's %M of each measurement (native / lsan /
                    valgrind / plain memcheck): the largest single process's
                    maximum RSS, not a sum over processes;
  user findings:    leakgate's user findings per engine (DL definite, IL
                    indirect, PL possibly lost, SR still reachable, E
                    memory errors).
Below the table, every user finding with its kind, file:line, function, bytes
and tests, per engine; whether lsan's definite and indirect leaks are the
Valgrind engine's (bench/pertest_compare.py --leaks); and every run (the
extra measurements malloc, lsanrt, lsanrt-exact too): wall, CPU, exit code,
the load averages around it, its log.
Standard library only.
"""
import glob
import json
import os
import re
import statistics
import subprocess
import sys

MEASURES = ("native", "lsan", "valgrind", "memcheck")
EXTRA = ("malloc", "lsanrt", "lsanrt-exact")
SHORT = {
    "Leak_DefinitelyLost": "DL",
    "Leak_IndirectlyLost": "IL",
    "Leak_PossiblyLost": "PL",
    "Leak_StillReachable": "SR",
}


def runs(res, suite, measure):
    """[(run, time dict, report or None, log path)] of one measurement."""
    out = []
    for tf in sorted(glob.glob(os.path.join(res, f"{suite}.{measure}.*.time"))):
        base = tf[: -len(".time")]
        t = {}
        with open(tf, encoding="utf-8") as fh:
            for line in fh:
                key, _, val = line.partition(": ")
                t[key] = val.strip()
        if "time" not in t:
            continue  # still running
        wall, user, sys_, rss = t["time"].split()
        t.update(wall=float(wall), cpu=float(user) + float(sys_), rss=int(rss) / 1024)
        rep = None
        if os.path.exists(base + ".json"):
            try:
                with open(base + ".json", encoding="utf-8") as fh:
                    rep = json.load(fh)
            except ValueError:
                rep = None
        out.append((base.rsplit(".", 1)[1], t, rep, base + ".log"))
    return out


def med(rs, key="wall"):
    return statistics.median(t[key] for _, t, _, _ in rs) if rs else None


def ntests(log):
    """Counts from pytest's last summary line ('762 passed, 2 skipped in 5.4s')."""
    try:
        with open(log, encoding="utf-8", errors="replace") as fh:
            lines = [ln for ln in fh if re.search(r"\b(passed|failed|error|errors)\b.* in [\d.]+s", ln)]
    except OSError:
        return None, {}
    if not lines:
        return None, {}
    counts = {k: int(n) for n, k in re.findall(r"(\d+) (\w+)", lines[-1].split(" in ")[0])}
    total = sum(v for k, v in counts.items() if k not in ("warnings", "warning", "subtests", "deselected"))
    return total, counts


def reruns(rep):
    out = []
    for n in rep.get("notes") or []:
        m = re.search(r"(?:ran again|re-ran) (with [^(]*?)\s*\(([^)]*?)([\d.]+s)\)", n)
        if m:
            what = m.group(1).replace("a full garbage collection at every checkpoint", "full GC")
            what = what.replace("exact unwinding", "exact unwind")
            out.append(f"{what} ({m.group(3)})")
        elif re.search(r"\b(ran again|re-ran|re-run)\b", n):
            out.append(n[:80])
    return "; ".join(out) or "none"


def pytest_runs(log):
    """Every pytest summary line in a log: one per run of the suite (leakgate's
    re-runs print theirs too), as 'TESTS in SECONDS'."""
    out = []
    try:
        with open(log, encoding="utf-8", errors="replace") as fh:
            for ln in fh:
                m = re.search(r"^=*\s*(.*\b(?:passed|failed|errors?|deselected)\b.*) in ([\d.]+)s", ln)
                if m:
                    c = dict((k, int(n)) for n, k in re.findall(r"(\d+) (\w+)", m.group(1)))
                    ran = sum(v for k, v in c.items() if k not in ("deselected", "warnings", "warning", "subtests"))
                    bad = c.get("failed", 0) + c.get("error", 0) + c.get("errors", 0)
                    out.append(f"{ran}" + (f" ({bad} failed)" if bad else "") + f" in {float(m.group(2)):.0f}s")
    except OSError:
        pass
    return out


def checks(rep):
    for e in rep.get("environment") or []:
        m = re.search(r"checker turns: (\d+) checkpoint checks ran, (\d+) did not", e)
        if m:
            ran, skipped = int(m.group(1)), int(m.group(2))
            return f"{ran}/{ran + skipped}"
    pt = rep.get("per_test") or {}
    return f"{pt['checkpoints']}" if "checkpoints" in pt else "-"


def user(rep):
    return [f for f in rep.get("findings") or [] if f.get("category") == "user"]


def kinds(rep):
    c = {}
    for f in user(rep):
        k = SHORT.get(f.get("kind"), "E")
        c[k] = c.get(k, 0) + 1
    return ", ".join(f"{n} {k}" for k, n in sorted(c.items())) or "none"


def detail(f):
    loc = f.get("location") or {}
    tests = [t.get("test") for t in f.get("tests") or []]
    t = ", ".join(tests[:3]) + (f" and {len(tests) - 3} more" if len(tests) > 3 else "")
    return (
        f"{SHORT.get(f.get('kind'), f.get('kind'))} {loc.get('file')}:{loc.get('line')} "
        f"in {loc.get('function')}" + (f" ({f.get('bytes')} B)" if f.get("bytes") is not None else "")
        + (f" [{t}]" if t else "")
    )


def fmt(x):
    return "-" if x is None else f"{x:.1f}"


def main(argv):
    if len(argv) < 2:
        print(__doc__.splitlines()[2], file=sys.stderr)
        return 2
    res = argv[1]
    suites = argv[2:] or sorted({os.path.basename(p).split(".")[0] for p in glob.glob(os.path.join(res, "*.time"))})
    print("| suite | tests | native s | lsan s (×native) | valgrind s (×plain memcheck) "
          "| plain memcheck s | re-runs | checks | peak MB (native/lsan/valgrind/memcheck) | user findings |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    details = []
    for s in suites:
        r = {m: runs(res, s, m) for m in MEASURES}
        n, counts = (None, {})
        for m in MEASURES:
            if r[m]:
                n, counts = ntests(r[m][0][3])
                if n is not None:
                    break
        bad = {k: v for k, v in counts.items() if k in ("failed", "error", "errors")}
        tests = "-" if n is None else str(n) + (
            " (" + ", ".join(f"{v} {k}" for k, v in bad.items()) + ")" if bad else "")
        nat, ls, vg, mc = (med(r[m]) for m in ("native", "lsan", "valgrind", "memcheck"))
        lcol = fmt(ls) + (f" ({ls / nat:.0f}×)" if ls and nat else "")
        vcol = fmt(vg) + (f" ({vg / mc:.1f}×)" if vg and mc else "")
        rr, ck, fnd = [], [], []
        for m in ("lsan", "valgrind", "memcheck"):
            reps = [rep for _, _, rep, _ in r[m] if rep]
            if not reps:
                continue
            rep = reps[0]
            if m != "memcheck":
                runs_ = pytest_runs([lg for _, _, rp, lg in r[m] if rp][0])
                rr.append(f"{m}: {reruns(rep)}" + (
                    f" (pytest runs: {', '.join(runs_)})" if len(runs_) > 1 or "failed" in "".join(runs_) else ""))
                ck.append(f"{m}: {checks(rep)}")
            status = (rep.get("verdict") or {}).get("status")
            fnd.append(f"{m}" + (f" ({status})" if status and status not in ("pass", "fail") else "")
                       + f": {kinds(rep)}")
            details.append((s, m, rep))
        peak = "/".join("-" if not r[m] else f"{med(r[m], 'rss'):.0f}" for m in MEASURES)
        print(f"| {s} | {tests} | {fmt(nat)} | {lcol} | {vcol} | {fmt(mc)} | "
              f"{'; '.join(rr) or '-'} | {'; '.join(ck) or '-'} | {peak} | {'; '.join(fnd) or '-'} |")
    print()
    for s, m, rep in details:
        fs = user(rep)
        print(f"{s}, {m}: {len(fs)} user findings")
        for f in fs:
            print(f"  - {detail(f)}")
    print()
    # lsan's definite and indirect user leaks against the Valgrind engine's
    # (bench/pertest_compare.py --leaks: kind, location, direct bytes,
    # blocks, count, tests).
    for s in suites:
        a, b = (runs(res, s, m) for m in ("valgrind", "lsan"))
        ra = [lg[: -len(".log")] + ".json" for _, _, rep, lg in a if rep]
        rb = [lg[: -len(".log")] + ".json" for _, _, rep, lg in b if rep]
        if ra and rb:
            out = subprocess.run(
                [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "pertest_compare.py"),
                 "--leaks", ra[0], rb[0]], capture_output=True, text=True).stdout
            n = sum(1 for ln in out.splitlines() if ln[:2] in ("- ", "+ "))
            print(f"{s}: lsan's user leaks against valgrind's (pertest_compare.py --leaks): "
                  + ("identical" if out.strip() == "OK" else f"{n} differing lines (- valgrind, + lsan):"))
            for ln in out.splitlines():
                if ln[:2] in ("- ", "+ "):
                    print(f"  {ln}")
    print()
    for s in suites:
        for m in MEASURES + EXTRA:
            for i, t, _, log in runs(res, s, m):
                print(f"{s} {m} run {i}: wall {t['wall']:.1f} s, CPU {t['cpu']:.1f} s, "
                      f"exit {t.get('exit', '?')}, load before {t.get('load before', '?')[:14]}, "
                      f"after {t.get('load after', '?')[:14]}; log {log}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
