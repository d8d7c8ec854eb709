#!/usr/bin/env bash
# bench/pertest.sh - time to verdict of per-test pytest runs (issue 19).
#
# Times `leakgate run [FLAGS] -- python -m pytest -q -p no:cacheprovider
# [PYTEST FLAGS] FILES` (per-test checkpoints are automatic for pytest) on two
# suites over the CPython test extension `leakext` (tests/programs/cpython,
# built in place):
#   small: tests/programs/pytest/ test_suite.py + test_grow.py (7 tests, the
#          suite of tests/it/per_test.rs);
#   large: bench/pertest-suite/ (16 tests doing some work each, with a per-call
#          leak, a cache, a parametrised leak and one UninitCondition).
# in six configurations, RUNS times each, alternating (the order rotates every
# round):
#   serial:   no extra flags;
#   xdist:    `-n 2` to pytest: two workers forked from one pytest under
#             Valgrind after collection (python/leakgate_probe/forked_workers.py);
#   origins:  `--origins auto` to leakgate run;
#   both:     both;
#   xdistw:   `-n 2` with LEAKGATE_FORK_WORKERS=0: pytest-xdist's own workers,
#             each started under Valgrind, the controller native;
#   xdistwboth: xdistw and `--origins auto`;
#   auto:     `-n auto` to pytest: leakgate collects the tests natively and
#             picks the workers (src/run/workers.rs; the report's environment
#             says what it chose, printed below the table);
#   autoboth: `-n auto` and `--origins auto`.
# MODES="serial auto autoboth" picks configurations (default: all eight; serial
# is always run, it is the baseline).
# Prints a table of medians (wall seconds; the ratio to serial; CPU seconds,
# user + system of leakgate, Valgrind and every traced process), leakgate's exit
# codes, and whether each configuration's user findings (kind, location, bytes,
# blocks, count, tests with their bytes, growth; bench/pertest_compare.py) are
# those of serial's first run (the differences are printed below the table).
# SUITES="small large large-k" picks suites (default: small large; large-k is
# the large suite with -k "not uninit_branch": no --origins auto re-run).
# A configuration that cannot run (no pytest-xdist in $PYTHON, a leakgate
# without --origins) is printed as n/a.
# Usage: [PYTHON=python] bench/pertest.sh [RUNS]   (default 3; PYTHON defaults
#        to python3 and needs pytest, and pytest-xdist for -n 2; needs
#        valgrind and a C compiler; work files in
#        ${TMPDIR:-/tmp}/leakgate-bench-pertest. One round of serial and -n 2
#        on both suites took 7.5 min on 2 cores: 6 configurations x 3 runs,
#        the default, take about 70 min; SUITES=small alone about 9 min)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
RUNS="${1:-3}"
cargo build --release -q
LG="$PWD/target/release/leakgate"
PY=$("${PYTHON:-python3}" -c 'import sys; print(sys.executable)')
WORK="${TMPDIR:-/tmp}/leakgate-bench-pertest"
if ! "$PY" -c 'import pytest' 2>/dev/null; then
    echo "bench/pertest.sh: $PY cannot import pytest (set PYTHON to a python with pytest)" >&2
    exit 2
fi

# Which configurations can run.
declare -A WHY NA
"$PY" -c 'import xdist' 2>/dev/null || WHY[xdist]="no pytest-xdist: $PY cannot import xdist"
LG_HELP=$("$LG" run --help)
[[ "$LG_HELP" == *--origins* ]] || WHY[origins]="leakgate has no --origins"
[ -z "${WHY[xdist]:-}" ] || NA[xdist]="n/a (${WHY[xdist]})"
[ -z "${WHY[xdist]:-}" ] || NA[auto]="n/a (${WHY[xdist]})"
[ -z "${WHY[xdist]:-}" ] || NA[xdistw]="n/a (${WHY[xdist]})"
[ -z "${WHY[origins]:-}" ] || NA[origins]="n/a (${WHY[origins]})"
if [ -n "${WHY[xdist]:-}${WHY[origins]:-}" ]; then
    NA[both]="n/a (${WHY[xdist]:-}${WHY[xdist]:+${WHY[origins]:+; }}${WHY[origins]:-})"
    NA[autoboth]="${NA[both]}"
    NA[xdistwboth]="${NA[both]}"
fi
read -r -a CONFIGS <<<"${MODES:-serial xdist origins both auto autoboth xdistw xdistwboth}"
[[ " ${CONFIGS[*]} " == *" serial "* ]] || CONFIGS=(serial "${CONFIGS[@]}")
declare -A LABEL=([serial]="serial default" [xdist]="-n 2" [origins]="--origins auto" [both]="-n 2 --origins auto"
    [auto]="-n auto" [autoboth]="-n auto --origins auto" [xdistw]="-n 2, xdist's workers"
    [xdistwboth]="-n 2 --origins auto, xdist's")
ACTIVE=()
for c in "${CONFIGS[@]}"; do [ -n "${NA[$c]:-}" ] || ACTIVE+=("$c"); done

# The suites: the extension built once, copied next to each suite's files.
rm -rf "$WORK" && mkdir -p "$WORK"
cp -r tests/programs/cpython "$WORK/ext"
(cd "$WORK/ext" && "$PY" setup.py -q build_ext --inplace >"$WORK/build.log" 2>&1) ||
    { echo "bench/pertest.sh: building leakext failed, see $WORK/build.log" >&2; exit 2; }
cp -r "$WORK/ext" "$WORK/small" && cp tests/programs/pytest/*.py "$WORK/small/"
cp -r "$WORK/ext" "$WORK/large" && cp bench/pertest-suite/*.py "$WORK/large/"
cp -r "$WORK/large" "$WORK/large-k"
read -r -a SUITES <<<"${SUITES:-small large}"
declare -A FILES=([small]="test_suite.py test_grow.py")
FILES[large]=$(cd bench/pertest-suite && echo test_*.py)
FILES[large-k]=${FILES[large]}
# large-k: the large suite without its uninitialised value (-k), so that
# --origins auto needs no re-run.
declare -A KEXPR=([large-k]="not uninit_branch")

declare -A T C RC
# measure SUITE CONFIG ROUND: one leakgate run; wall and CPU (user + system,
# all processes) seconds and exit code appended.
measure() {
    local suite="$1" cfg="$2" i="$3" rc=0
    local lgflags=() pyflags=() envs=()
    [ -z "${KEXPR[$suite]:-}" ] || pyflags+=(-k "${KEXPR[$suite]}")
    case "$cfg" in
        xdist) pyflags+=(-n 2) ;;
        origins) lgflags=(--origins auto) ;;
        both) pyflags+=(-n 2); lgflags=(--origins auto) ;;
        auto) pyflags+=(-n auto) ;;
        autoboth) pyflags+=(-n auto); lgflags=(--origins auto) ;;
        xdistw) pyflags+=(-n 2); envs=(LEAKGATE_FORK_WORKERS=0) ;;
        xdistwboth) pyflags+=(-n 2); envs=(LEAKGATE_FORK_WORKERS=0); lgflags=(--origins auto) ;;
    esac
    # shellcheck disable=SC2086 # FILES are plain file names
    (cd "$WORK/$suite" && env -u PYTEST_PLUGINS -u PYTHONPATH -u PYTHONMALLOC -u LEAKGATE_FORK_WORKERS \
        "${envs[@]}" PYTHONDONTWRITEBYTECODE=1 \
        /usr/bin/time -o "$WORK/time.out" -f '%e %U %S' \
        "$LG" run --format json -o "$WORK/$suite.$cfg.$i.json" "${lgflags[@]}" -- \
        "$PY" -m pytest -q -p no:cacheprovider "${pyflags[@]}" ${FILES[$suite]} \
        >"$WORK/$suite.$cfg.$i.log" 2>&1) || rc=$?
    # leakgate exits 1 when the gate fails: that is a result, not an error.
    local out
    out=$(tail -n1 "$WORK/time.out")
    T[$suite.$cfg]+="${out%% *} "
    C[$suite.$cfg]+="$(awk '{print $2 + $3}' <<<"$out") "
    RC[$suite.$cfg]+="$rc "
}
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

n=${#ACTIVE[@]}
for i in $(seq "$RUNS"); do
    for suite in "${SUITES[@]}"; do
        for k in $(seq 0 $((n - 1))); do
            cfg="${ACTIVE[$(((k + i - 1) % n))]}"
            echo "round $i/$RUNS: $suite, ${LABEL[$cfg]}" >&2
            measure "$suite" "$cfg" "$i"
        done
    done
done

# Findings of every run against serial's first run.
declare -A CMP
DIFFS=""
for suite in "${SUITES[@]}"; do
    base="$WORK/$suite.serial.1.json"
    for cfg in "${ACTIVE[@]}"; do
        res=OK
        for i in $(seq "$RUNS"); do
            [ "$cfg.$i" != serial.1 ] || continue
            out=$("$PY" bench/pertest_compare.py "$base" "$WORK/$suite.$cfg.$i.json" 2>&1) || {
                res=DIFF
                DIFFS+="$suite, ${LABEL[$cfg]}, run $i vs serial run 1:"$'\n'"$out"$'\n'
            }
        done
        CMP[$suite.$cfg]=$res
    done
done

ntests() { "$PY" -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["per_test"]["tests"]))' "$1" 2>/dev/null || echo "?"; }
echo
echo "leakgate $("$LG" --version | awk 'NR == 1 {print $2}'), $("$PY" -c 'import platform, pytest; print("Python", platform.python_version(), "pytest", pytest.__version__)'), $(nproc) cores, medians of $RUNS runs"
echo
echo "| suite (tests)  | configuration          | wall (s) | vs serial | CPU (s) | leakgate exit | findings vs serial |"
echo "|----------------|------------------------|----------|-----------|---------|---------------|--------------------|"
for suite in "${SUITES[@]}"; do
    name="$suite ($(ntests "$WORK/$suite.serial.1.json"))"
    s=$(median <<<"${T[$suite.serial]}")
    for cfg in "${CONFIGS[@]}"; do
        if [ -n "${NA[$cfg]:-}" ]; then
            printf '| %-14s | %-22s | %s |\n' "$name" "${LABEL[$cfg]}" "${NA[$cfg]}"
            continue
        fi
        t=$(median <<<"${T[$suite.$cfg]}")
        cpu=$(median <<<"${C[$suite.$cfg]}")
        codes=$(tr ' ' '\n' <<<"${RC[$suite.$cfg]}" | grep -v '^$' | sort -u | paste -sd/)
        cmp="${CMP[$suite.$cfg]}"
        [ "$cfg" != serial ] || [ "$RUNS" -gt 1 ] || cmp="(baseline)"
        awk -v n="$name" -v l="${LABEL[$cfg]}" -v t="$t" -v s="$s" -v u="$cpu" -v c="$codes" -v m="$cmp" 'BEGIN {
            r = s > 0 ? sprintf("%8.2fx", t / s) : "        -";
            printf "| %-14s | %-22s | %8.1f | %s | %7.1f | %13s | %-18s |\n", n, l, t, r, u, c, m }'
    done
done
echo
all_codes=$(for k in "${!RC[@]}"; do tr ' ' '\n' <<<"${RC[$k]}"; done | grep -v '^$' | sort -u | paste -sd/)
if [[ "$all_codes" == */* ]]; then
    echo "leakgate exit codes DIFFER between runs: $all_codes"
else
    echo "leakgate exit code of every run: $all_codes"
fi
if [ -n "$DIFFS" ]; then
    echo
    echo "Differing user findings (- serial run 1 only, + the other run only):"
    printf '%s' "$DIFFS"
else
    echo "user findings: every run identical to serial run 1"
fi
for suite in "${SUITES[@]}"; do
    for cfg in auto autoboth; do
        f="$WORK/$suite.$cfg.1.json"
        [ -f "$f" ] || continue
        chose=$("$PY" -c 'import json, sys; print("; ".join(e.split(" (set by")[0] for e in json.load(open(sys.argv[1]))["environment"] if "-n auto:" in e))' "$f" 2>/dev/null || true)
        echo "$suite, ${LABEL[$cfg]}: ${chose:-no choice reported}"
    done
done
echo "(reports and pytest output: $WORK/SUITE.CONFIG.RUN.{json,log})"
