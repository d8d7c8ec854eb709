#!/usr/bin/env bash
# bench/run.sh - leakgate's performance benchmark (see docs/performance.md).
#
# Prepares the inputs (decompresses the torch corpus, 1.76 GB; a second copy
# as a second process's report; builds the CPython test extension), then runs,
# alternately, RUNS times each:
#   analyze:  leakgate analyze on the corpus, and on corpus + copy (2x data);
#             Python xml.etree iterparse (bench/iterparse.py); wc -l.
#   run:      bare `valgrind <leakgate's flags> python test.py` vs
#             `leakgate run -- python test.py` on the CPython test program.
# Prints a table of medians (wall seconds, MB/s, peak RSS) and ratios.
# Usage: bench/run.sh [RUNS] [VG_RUNS]   (defaults 3 and 10: analyze runs, and
#        runs of the valgrind pair; needs zstd, python3, valgrind, ~1.7 GB
#        free in $TMPDIR; takes several minutes, mostly iterparse)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
RUNS="${1:-3}"
VG_RUNS="${2:-10}"
cargo build --release -q
LG="$PWD/target/release/leakgate"
WORK="${TMPDIR:-/tmp}/leakgate-bench"
mkdir -p "$WORK"
XML="$WORK/torch.xml"
[ -s "$XML" ] || zstd -dq fixtures/torch-ext/valgrind.xml.zst -o "$XML"
ln -sf "$XML" "$WORK/torch-second-process.xml"
SIZE=$(stat -c %s "$XML")
PY=$(python3 -c 'import sys; print(sys.executable)')
EXT="$WORK/cpython"
rm -rf "$EXT" && cp -r tests/programs/cpython "$EXT"
(cd "$EXT" && "$PY" setup.py -q build_ext --inplace >/dev/null 2>&1)

declare -A T M
# measure NAME CMD...: wall seconds and peak RSS (KiB) of one run, appended.
measure() {
    local name="$1"; shift
    local out
    # leakgate exits 1 when the gate fails: that is a result, not an error.
    /usr/bin/time -o "$WORK/time.out" -f '%e %M' "$@" >/dev/null 2>&1 || true
    out=$(tail -n1 "$WORK/time.out")
    T[$name]+="${out%% *} "
    M[$name]+="${out##* } "
}
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

VG_FLAGS=(--tool=memcheck --leak-check=full --track-origins=yes --xml=yes
    --gen-suppressions=all --show-below-main=yes --num-callers=40
    --show-leak-kinds=definite,indirect,possible --error-limit=no)
for i in $(seq "$RUNS"); do
    echo "run $i/$RUNS" >&2
    measure leakgate "$LG" analyze "$XML"
    measure leakgate2x "$LG" analyze "$XML" "$WORK/torch-second-process.xml"
    measure wc wc -l "$XML"
    measure iterparse python3 bench/iterparse.py "$XML"
done
# The run comparison: a 4-5 s program whose wall time varies by +-10 % from
# run to run, so more runs, alternating which goes first.
for i in $(seq "$VG_RUNS"); do
    echo "valgrind run $i/$VG_RUNS" >&2
    if [ $((i % 2)) -eq 1 ]; then
        measure vg_bare env PYTHONMALLOC=malloc valgrind "${VG_FLAGS[@]}" \
            --xml-file="$WORK/bare.%p.xml" --log-file="$WORK/bare.%p.log" "$PY" "$EXT/test.py"
        measure vg_leakgate "$LG" run -- "$PY" "$EXT/test.py"
    else
        measure vg_leakgate "$LG" run -- "$PY" "$EXT/test.py"
        measure vg_bare env PYTHONMALLOC=malloc valgrind "${VG_FLAGS[@]}" \
            --xml-file="$WORK/bare.%p.xml" --log-file="$WORK/bare.%p.log" "$PY" "$EXT/test.py"
    fi
    rm -f "$WORK"/bare.*.xml "$WORK"/bare.*.log
done

row() { # name label bytes
    local t m
    t=$(median <<<"${T[$1]}"); m=$(median <<<"${M[$1]}")
    awk -v l="$2" -v t="$t" -v m="$m" -v b="$3" 'BEGIN {
        mbs = (b > 0 && t > 0) ? sprintf("%.0f", b / 1e6 / t) : "-";
        printf "| %-44s | %8.2f | %7s | %8.1f |\n", l, t, mbs, m / 1024 }'
}
med() { median <<<"${T[$1]}"; }
echo
echo "Corpus: $(awk -v b="$SIZE" 'BEGIN{printf "%.2f GB", b/1e9}'), $(nproc) cores, medians of $RUNS runs ($VG_RUNS for the valgrind pair)"
echo
echo "| what                                         | wall (s) |    MB/s | RSS (MiB) |"
echo "|----------------------------------------------|----------|---------|-----------|"
row leakgate "leakgate analyze (corpus)" "$SIZE"
row leakgate2x "leakgate analyze (corpus + second process, 2x)" "$((SIZE * 2))"
row iterparse "python3 xml.etree iterparse (corpus)" "$SIZE"
row wc "wc -l (corpus)" "$SIZE"
row vg_bare "valgrind python test.py (CPython test program)" 0
row vg_leakgate "leakgate run -- python test.py" 0
echo
awk -v a="$(med leakgate)" -v p="$(med iterparse)" -v w="$(med wc)" -v b="$(med vg_bare)" -v l="$(med vg_leakgate)" 'BEGIN {
    printf "iterparse / leakgate: %.1fx faster\n", p / a;
    printf "leakgate / wc -l: %.1fx\n", a / w;
    printf "leakgate run overhead over bare valgrind: %+.1f%%\n", (l - b) / b * 100 }'
