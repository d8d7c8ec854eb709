#!/usr/bin/env bash
# bench/engines.sh - time to verdict of `leakgate run --engine valgrind`
# against `--engine lsan` (and `asan`) on the same programs (issue 29).
#
# Times `leakgate run --engine E --format json -- CMD` for three workloads:
#   c:      tests/programs/c/leak_kinds.c built with gcc -O0 -g (a plain C
#           program: definite and indirect leaks);
#   script: tests/programs/cpython/test.py over the CPython test extension
#           `leakext` (built in place with -O0 -g);
#   pytest: tests/programs/pytest/test_suite.py over the same extension
#           (per-test checkpoints, 6 tests);
#   large:  bench/pertest-suite/ (16 tests doing some work each: a per-call
#           leak, a cache, a parametrised leak; allocation-heavy);
# WORKLOADS="c script pytest large" picks some (default: all four);
# natively (no leakgate: the target alone) and under each engine in ENGINES
# (default "valgrind lsan asan"; asan preloads libasan into the same
# uninstrumented programs: its leak check), RUNS times each,
# alternating. Prints a table of medians (wall seconds, the ratios to the
# native and to valgrind's median, leakgate's exit codes) and whether each engine's user
# leaks (kind, location, bytes, blocks, count, tests; bench/pertest_compare.py
# --leaks) are Valgrind's first run's; differences are printed below the
# table. The sanitizer engines' times include their exact-unwinding re-run
# when one was needed (the report's engine.unwind says "exact").
# Usage: [PYTHON=python3] [ENGINES="valgrind lsan"] bench/engines.sh [RUNS]
#        (default 3; needs valgrind, gcc with liblsan/libasan, and pytest in
#        $PYTHON; work files in ${TMPDIR:-/tmp}/leakgate-bench-engines)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
RUNS="${1:-3}"
read -r -a ENGINES <<<"${ENGINES:-valgrind lsan asan}"
cargo build --release -q
LG="$PWD/target/release/leakgate"
PY=$("${PYTHON:-python3}" -c 'import sys; print(sys.executable)')
WORK="${TMPDIR:-/tmp}/leakgate-bench-engines"
if ! "$PY" -c 'import pytest' 2>/dev/null; then
    echo "bench/engines.sh: $PY cannot import pytest (set PYTHON to a python with pytest)" >&2
    exit 2
fi
rm -rf "$WORK"
mkdir -p "$WORK/ext"
gcc -O0 -g -o "$WORK/leak_kinds" tests/programs/c/leak_kinds.c
cp tests/programs/cpython/* tests/programs/pytest/test_suite.py \
    tests/programs/pytest/conftest.py "$WORK/ext/"
(cd "$WORK/ext" && CFLAGS="-O0 -g" "$PY" setup.py -q build_ext --inplace \
    >"$WORK/build.log" 2>&1) || { cat "$WORK/build.log" >&2; exit 2; }
mkdir -p "$WORK/large"
cp "$WORK"/ext/leakext*.so bench/pertest-suite/*.py "$WORK/large/"

read -r -a WORKLOADS <<<"${WORKLOADS:-c script pytest large}"
declare -A DIR=([c]=ext [script]=ext [pytest]=ext [large]=large)
declare -A CMD=(
    [c]="$WORK/leak_kinds"
    [script]="$PY test.py"
    [pytest]="$PY -m pytest -q -p no:cacheprovider test_suite.py"
    [large]="$PY -m pytest -q -p no:cacheprovider $(cd bench/pertest-suite && echo test_*.py)"
)
declare -A WALL CODE
for ((r = 0; r < RUNS; r++)); do
    for w in "${WORKLOADS[@]}"; do
        t0=$(date +%s.%N)
        # shellcheck disable=SC2086 # CMD holds a command line to split
        (cd "$WORK/${DIR[$w]}" && ${CMD[$w]} >/dev/null 2>&1) || true
        t1=$(date +%s.%N)
        WALL[$w-native]+="$(echo "$t1 - $t0" | bc) "
        for e in "${ENGINES[@]}"; do
            out="$WORK/$w-$e-$r.json"
            t0=$(date +%s.%N)
            set +e
            # shellcheck disable=SC2086 # CMD holds a command line to split
            (cd "$WORK/${DIR[$w]}" && env -u PYTHONMALLOC -u LSAN_OPTIONS -u ASAN_OPTIONS \
                "$LG" run --engine "$e" --format json --output "$out" -- ${CMD[$w]} \
                >/dev/null 2>"$WORK/$w-$e-$r.err")
            c=$?
            set -e
            t1=$(date +%s.%N)
            WALL[$w-$e]+="$(echo "$t1 - $t0" | bc) "
            CODE[$w-$e]+="$c "
        done
    done
done

median() { tr ' ' '\n' | { grep . || true; } | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf '%-8s %-9s %9s %7s %8s %-8s %s\n' workload engine "wall (s)" "/native" "/valgrind" "exit" "same leaks as valgrind"
DIFFS=""
for w in "${WORKLOADS[@]}"; do
    base=$(echo "${WALL[$w-valgrind]:-}" | median)
    native=$(echo "${WALL[$w-native]}" | median)
    printf '%-8s %-9s %9.2f %7s %8s\n' "$w" native "$native" 1 \
        "$([ -z "$base" ] || echo "scale=3; $native / $base" | bc)"
    for e in "${ENGINES[@]}"; do
        m=$(echo "${WALL[$w-$e]}" | median)
        ratio=n/a
        [ -z "$base" ] || ratio=$(echo "scale=3; $m / $base" | bc)
        nratio=$(echo "scale=1; $m / $native" | bc)
        same=yes
        [ -n "$base" ] || same="n/a (valgrind not run)"
        for ((r = 0; r < RUNS; r++)); do
            [ -n "$base" ] || break
            if ! d=$("$PY" bench/pertest_compare.py --leaks "$WORK/$w-valgrind-0.json" \
                "$WORK/$w-$e-$r.json"); then
                same=no
                DIFFS+="$w $e run $r:"$'\n'"$d"$'\n'
            fi
        done
        printf '%-8s %-9s %9.2f %7s %8s %-8s %s\n' "$w" "$e" "$m" "$nratio" "$ratio" "${CODE[$w-$e]% }" "$same"
    done
done
[ -z "$DIFFS" ] || printf '\nDifferences (- valgrind, + engine):\n%s' "$DIFFS"
