#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (default 600), or MAX_EXECS
# executions (default 10 million), whichever comes first, at the lowest CPU
# priority. Seeds: fuzz/seeds/ (small hand-written cases), the recorded
# reports in fixtures/, the bundled suppressions, and — when present — the
# shared corpora in ../shared/corpus (read from there at run time, never
# copied into this repository). Logs go to fuzz/logs/TARGET.log, new inputs
# to fuzz/corpus/TARGET/, crashes to fuzz/artifacts/TARGET/.
#
#   fuzz/run.sh [SECONDS] [TARGET...]
#
# Built with debug assertions and overflow checks, without a sanitizer (safe
# Rust: panics are the findings). Needs a nightly toolchain and cargo-fuzz
# (cargo install cargo-fuzz).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-600}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(xml_reader suppression_parser matcher)
max_execs=${MAX_EXECS:-10000000}
shared=../shared/corpus

mkdir -p fuzz/logs
for t in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
  seeds=("fuzz/corpus/$t")
  [ -d "fuzz/seeds/$t" ] && seeds+=("fuzz/seeds/$t")
  extra=$(mktemp -d)
  trap 'rm -rf "$extra"' EXIT
  case $t in
    xml_reader)
      # Recorded reports (small ones: the fuzzer's inputs stay under 1 MB).
      find fixtures "$shared" -name '*.xml' -size -1024k 2>/dev/null \
        | while read -r f; do cp "$f" "$extra/$(echo "$f" | tr '/' '_')"; done
      # Valgrind's own regression expectations are XML too.
      if [ -d "$shared/valgrind-tests" ]; then
        find "$shared/valgrind-tests" -name '*.exp' -size -1024k \
          | while read -r f; do cp "$f" "$extra/$(basename "$f")"; done
      fi
      ;;
    suppression_parser)
      cp suppressions/*.supp "$extra/"
      find "$shared" -name '*.supp' -size -1024k 2>/dev/null \
        | while read -r f; do cp "$f" "$extra/$(basename "$f")"; done
      ;;
  esac
  seeds+=("$extra")
  # Build first: a target that does not build is an error, not a quiet run.
  nice -n 19 cargo +nightly fuzz build --sanitizer none --debug-assertions "$t"
  echo "== $t: ${secs}s or $max_execs runs (seeds: ${seeds[*]})"
  nice -n 19 cargo +nightly fuzz run --sanitizer none --debug-assertions "$t" "${seeds[@]}" -- \
    -max_total_time="$secs" -runs="$max_execs" -max_len=1048576 -rss_limit_mb=4096 \
    -print_final_stats=1 -artifact_prefix="fuzz/artifacts/$t/" 2>&1 | tee "fuzz/logs/$t.log" \
    | grep -E '^#[0-9]+[[:space:]]+(INITED|DONE)|^stat::|ERROR|panicked' || true
  rm -rf "$extra"
  trap - EXIT
done
echo "== summary (executions, coverage, features)"
for t in "${targets[@]}"; do
  printf '%-20s ' "$t"
  grep -E '^stat::number_of_executed_units' "fuzz/logs/$t.log" | awk '{printf "execs %s ", $2}'
  grep -E '^#[0-9]+[[:space:]]+DONE' "fuzz/logs/$t.log" | tail -1 | sed -E 's/.*(cov: [0-9]+ ft: [0-9]+).*/\1/'
  echo
  if ls "fuzz/artifacts/$t"/crash-* "fuzz/artifacts/$t"/oom-* "fuzz/artifacts/$t"/timeout-* >/dev/null 2>&1; then
    echo "   FINDINGS in fuzz/artifacts/$t/"
  fi
done
