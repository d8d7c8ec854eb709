#!/usr/bin/env bash
# bench/match.sh - post-hoc suppression matching on the torch corpus.
#
# Decompresses fixtures/torch-ext/valgrind.xml.zst (1.76 GB, 60,906 records),
# generates 500 extra rules from it (bench/gen_rules.py), and runs
# `leakgate analyze` RUNS times each with: no suppressions, the bundled set,
# the bundled set + 500 rules. leakgate's LEAKGATE_TIMINGS=1 line gives the
# time spent in the matcher alone; the table shows medians.
# Usage: bench/match.sh [RUNS]   (default 5; needs zstd, python3, ~1.7 GB in $TMPDIR)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
RUNS="${1:-5}"
cargo build --release -q
LG=target/release/leakgate
WORK="${TMPDIR:-/tmp}/leakgate-bench"
mkdir -p "$WORK"
XML="$WORK/torch.xml"
[ -s "$XML" ] || zstd -dq fixtures/torch-ext/valgrind.xml.zst -o "$XML"
python3 bench/gen_rules.py "$XML" 500 > "$WORK/gen500.supp"
"$LG" lint "$WORK/gen500.supp" >/dev/null

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

run_case() { # label, args...
    local label="$1"; shift
    local totals=() supps=()
    for _ in $(seq "$RUNS"); do
        line=$( (LEAKGATE_TIMINGS=1 "$LG" analyze "$@" "$XML" 2>&1 >/dev/null || true) | grep "^leakgate timings")
        totals+=("$(sed -E 's/.*total ([0-9.]+)s.*/\1/' <<<"$line")")
        supps+=("$(sed -E 's/.*suppress ([0-9.]+)s.*/\1/' <<<"$line")")
        rules=$(sed -E 's/.*, ([0-9]+) rules\).*/\1/' <<<"$line")
    done
    printf '| %-28s | %5s | %8s | %9s |\n' "$label" "$rules" \
        "$(printf '%s\n' "${totals[@]}" | median)" "$(printf '%s\n' "${supps[@]}" | median)"
}

echo "torch corpus: $(du -h "$XML" | cut -f1), $RUNS runs each, medians in seconds"
echo "| case                         | rules | analyze  | matching  |"
echo "|------------------------------|-------|----------|-----------|"
run_case "no suppressions" --no-bundled-suppressions
run_case "bundled set" 
run_case "bundled set + 500 generated" --suppressions "$WORK/gen500.supp"
