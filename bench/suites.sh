#!/usr/bin/env bash
# bench/suites.sh - leakgate on real PyPI packages' own test suites (issue 40).
#
# For each suite in SUITES, installs the package from its sdist the ordinary
# way (`pip install SDIST`, with build isolation, CFLAGS/CXXFLAGS="-O0 -g",
# Rust: the release profile with opt-level 0 and debug info) into a venv of
# its own, and runs the package's own tests, taken from the same sdist:
#   cbor2:    cbor2 5.9.0, plain C (_cbor2), tests/ (pytest + hypothesis);
#   msgpack:  msgpack 1.1.2, Cython (_cmsgpack), test/;
#   greenlet: greenlet 3.5.6, C++ (_greenlet and two C/C++ test extensions),
#             the installed greenlet/tests (less test_leaks.py: see SENV below);
#   rpds:     rpds-py 2026.9.1, Rust/PyO3 (maturin), tests/.
# The venvs, sdists and extracted trees are cached under
# ${WORK:-$HOME/.cache/leakgate-bench-suites}/SUITE (delete a suite's
# directory to rebuild it); the sdists in $WORK/sdist.
# Each measurement runs RUNS times (default 1), from a directory holding a
# copy of the test directory, with --src-root at the extracted sdist (the
# extension is in the venv's site-packages; its debug info names the sdist's
# files). Measurements (MEASURE, default all, in this order):
#   native:   python -m pytest -q -p no:cacheprovider TESTS;
#   memcheck: PYTHONMALLOC=malloc valgrind --leak-check=full --xml=yes
#             --xml-file=F python -m pytest ... (plain Memcheck: no per-test
#             checks, no origins, no leakgate);
#   lsan:     leakgate run --engine lsan --format json -o R -- python -m pytest ...;
#   valgrind: leakgate run --format json -o R -- python -m pytest ... (the
#             default engine: long, cbor2 takes about half an hour).
# and, not in the default, to see where lsan's time goes (no leakgate, no
# checkpoints, no leak check):
#   malloc:   PYTHONMALLOC=malloc python -m pytest ...;
#   lsanrt:   the same with LeakSanitizer's runtime preloaded (its allocator
#             and fast-unwound allocation stacks), detect_leaks=0;
#   lsanrt-exact: the same with exact unwinding (fast_unwind_on_malloc=0,
#             malloc_context_size=40: what leakgate's exact re-run sets).
# Every run's wall, user and system seconds and peak RSS (/usr/bin/time %M:
# the largest single process's maximum resident set, not the sum over
# processes), the load average before and after it, its output and its
# report go to $RESULTS (default $WORK/results) as
# SUITE.MEASURE.RUN.{time,log,json,xml}. Then bench/suites_table.py prints the
# markdown table (suite | tests | native | lsan | valgrind | plain memcheck |
# re-runs | checks | peak MB | user findings) from $RESULTS; it can be run
# alone, while a long Valgrind run goes on.
# Usage: [SUITES="cbor2 msgpack greenlet rpds"] [MEASURE="native memcheck lsan valgrind"]
#        [PYTHON=python3] [WORK=DIR] [RESULTS=DIR] bench/suites.sh [RUNS]
#        (needs valgrind, gcc/g++, cargo and network for the first install;
#        the installs take about 10 min, rpds-py's Rust build most of it. On
#        this project's 2-core machine, shared and loaded, native, memcheck
#        and lsan on the four suites took about 20 min; the valgrind engine
#        2.5 min each for msgpack and rpds, 22 min for greenlet, 32 min for
#        cbor2)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$PWD
RUNS="${1:-1}"
WORK="${WORK:-$HOME/.cache/leakgate-bench-suites}"
RESULTS="${RESULTS:-$WORK/results}"
read -r -a SUITES <<<"${SUITES:-cbor2 msgpack greenlet rpds}"
read -r -a MEASURE <<<"${MEASURE:-native memcheck lsan valgrind}"
BASEPY=$("${PYTHON:-python3}" -c 'import sys; print(sys.executable)')
cargo build --release -q
LG="$REPO/target/release/leakgate"
mkdir -p "$WORK/sdist" "$RESULTS"
LIBLSAN=$(gcc -print-file-name=liblsan.so)

# What each suite installs and runs.
declare -A SPEC=([cbor2]="cbor2==5.9.0" [msgpack]="msgpack==1.1.2"
    [greenlet]="greenlet==3.5.6" [rpds]="rpds-py==2026.9.1")
declare -A SDIST=([cbor2]="cbor2-5.9.0" [msgpack]="msgpack-1.1.2"
    [greenlet]="greenlet-3.5.6" [rpds]="rpds_py-2026.9.1")
# The tests' own requirements (greenlet's "test" extra).
declare -A DEPS=([cbor2]="pytest hypothesis" [msgpack]="pytest"
    [greenlet]="pytest objgraph psutil setuptools" [rpds]="pytest")
# The test directory inside the sdist; greenlet's tests are run where they
# are installed (they need its test extensions, built into the package).
declare -A TESTDIR=([cbor2]=tests [msgpack]=test [rpds]=tests [greenlet]="")
# Deselected tests and settings, and why (greenlet's, in targs below):
#   greenlet: GREENLET_SKIP_LEAKCHECKS=1, because greenlet's own leak checks
#   (leakcheck.py) run every test again and again counting objects (182 s
#   natively instead of 32 s: leakgate is the leak check here);
#   test_leaks.py (ignored: object counts and RSS growth, threads).
declare -A SENV=([greenlet]="GREENLET_SKIP_LEAKCHECKS=1")

log() { echo "bench/suites.sh: $*" >&2; }

# setup SUITE: venv, sdist, install, test copy; cached ($WORK/SUITE/.done).
setup() {
    local s="$1" d="$WORK/$1"
    [ -f "$d/.done" ] && return 0
    log "$s: installing ${SPEC[$s]} from its sdist into $d/venv (build log: $d/install.log)"
    rm -rf "$d" && mkdir -p "$d"
    local sd
    sd=$(find "$WORK/sdist" -maxdepth 1 -name "${SDIST[$s]}.tar.gz" | head -n1)
    if [ -z "$sd" ]; then
        "$BASEPY" -m pip download -q --no-deps --no-binary :all: -d "$WORK/sdist" "${SPEC[$s]}" \
            >>"$d/install.log" 2>&1
        sd="$WORK/sdist/${SDIST[$s]}.tar.gz"
    fi
    "$BASEPY" -m venv "$d/venv"
    local py="$d/venv/bin/python"
    # shellcheck disable=SC2086 # DEPS is a list of requirements
    "$py" -m pip install -q ${DEPS[$s]} >>"$d/install.log" 2>&1
    CFLAGS="-O0 -g" CXXFLAGS="-O0 -g" \
        CARGO_PROFILE_RELEASE_OPT_LEVEL=0 CARGO_PROFILE_RELEASE_DEBUG=true \
        CARGO_PROFILE_RELEASE_STRIP=none CARGO_PROFILE_RELEASE_LTO=false \
        "$py" -m pip install -v --no-cache-dir "$sd" >>"$d/install.log" 2>&1 ||
        { log "$s: install failed, see $d/install.log"; return 1; }
    mkdir -p "$d/src" "$d/run"
    tar -xzf "$sd" -C "$d/src"
    if [ -n "${TESTDIR[$s]}" ]; then
        cp -r "$d/src/${SDIST[$s]}/${TESTDIR[$s]}" "$d/run/"
    fi
    "$py" -m pip freeze >"$d/freeze.txt"
    touch "$d/.done"
}

# targs SUITE: the pytest arguments (test directory and deselections).
targs() {
    local s="$1" t
    if [ -n "${TESTDIR[$s]}" ]; then
        echo "-q -p no:cacheprovider ${TESTDIR[$s]}"
        return
    fi
    t=$("$WORK/$s/venv/bin/python" -c 'import os, greenlet.tests as t; print(os.path.dirname(t.__file__))')
    echo "-q -p no:cacheprovider --ignore=$t/test_leaks.py $t"
}

# measure SUITE WHAT RUN
measure() {
    local s="$1" m="$2" i="$3" d="$WORK/$1" rc=0
    local py="$d/venv/bin/python" base="$RESULTS/$1.$2.$3"
    local args pre=()
    args=$(targs "$s")
    case "$m" in
        native) ;;
        memcheck) pre=(env PYTHONMALLOC=malloc valgrind --leak-check=full --xml=yes "--xml-file=$base.xml") ;;
        malloc) pre=(env PYTHONMALLOC=malloc) ;;
        lsanrt) pre=(env PYTHONMALLOC=malloc "LD_PRELOAD=$LIBLSAN" LSAN_OPTIONS=detect_leaks=0) ;;
        lsanrt-exact) pre=(env PYTHONMALLOC=malloc "LD_PRELOAD=$LIBLSAN"
            LSAN_OPTIONS=detect_leaks=0:fast_unwind_on_malloc=0:malloc_context_size=40) ;;
        lsan) pre=("$LG" run --engine lsan --src-root "$d/src/${SDIST[$s]}" --format json -o "$base.json" --) ;;
        valgrind) pre=("$LG" run --src-root "$d/src/${SDIST[$s]}" --format json -o "$base.json" --) ;;
        *) log "unknown measurement $m"; return 2 ;;
    esac
    log "$s: $m, run $i ($(date +%T), load $(cut -d' ' -f1-3 /proc/loadavg))"
    {
        echo "command: ${SENV[$s]:-} ${pre[*]} $py -m pytest $args"
        echo "load before: $(cat /proc/loadavg)"
    } >"$base.time"
    # shellcheck disable=SC2086 # args is a command line to split
    (cd "$d/run" && env -u PYTHONMALLOC -u PYTHONPATH -u LSAN_OPTIONS -u PYTEST_ADDOPTS \
        PYTHONDONTWRITEBYTECODE=1 ${SENV[$s]:-} \
        /usr/bin/time -a -o "$base.time" -f 'time: %e %U %S %M' \
        "${pre[@]}" "$py" -m pytest $args >"$base.log" 2>&1) || rc=$?
    {
        echo "load after: $(cat /proc/loadavg)"
        echo "exit: $rc"
    } >>"$base.time"
    log "$s: $m, run $i: $(grep '^time:' "$base.time" | tail -n1), exit $rc"
    # The plain Memcheck run's user findings, attributed by leakgate afterwards
    # (the same --src-root; no per-test checks, so no tests).
    if [ "$m" = memcheck ] && [ -s "$base.xml" ]; then
        "$LG" analyze --src-root "$d/src/${SDIST[$s]}" --format json -o "$base.json" "$base.xml" \
            >/dev/null 2>>"$base.log" || true
    fi
}

for s in "${SUITES[@]}"; do
    setup "$s" || continue
done
for ((i = 1; i <= RUNS; i++)); do
    for s in "${SUITES[@]}"; do
        [ -f "$WORK/$s/.done" ] || continue
        for m in "${MEASURE[@]}"; do
            measure "$s" "$m" "$i"
        done
    done
done
"$BASEPY" bench/suites_table.py "$RESULTS" "${SUITES[@]}"
