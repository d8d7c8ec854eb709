#!/usr/bin/env bash
# examples/leaky-ext/run.sh - build the example extension and run leakgate on it.
# Expects target/release/leakgate (cargo build --release). leakgate exits 1
# because the example leaks on purpose; this script reports that and exits 0.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
LEAKGATE="${LEAKGATE:-../../target/release/leakgate}"
python3 setup.py -q build_ext --inplace >/dev/null
set +e
"$LEAKGATE" run -- python3 test_spam.py
code=$?
set -e
echo
echo "leakgate exited with $code (1 = the gate failed on the planted leak, as expected)"
[ "$code" -eq 1 ]
