#!/usr/bin/env bash
#! tests/browser/screenshot.sh - load a leakgate HTML report in headless
#! Chromium from a file:// URL, fail on any console message, take a screenshot.
#
# usage: tests/browser/screenshot.sh PAGE.html OUT.png [WIDTH,HEIGHT]
#
# Exit status: 0 the page loaded, printed no console message and OUT.png was
# written; 1 console messages (printed), or the page or screenshot is missing;
# 2 usage; 77 no Chromium (set CHROMIUM to its path; Debian: apt-get install
# chromium). Runs as root too (--no-sandbox), with a fresh profile each time
# and no network: the page must be self-contained.
set -euo pipefail

if [ $# -lt 2 ] || [ $# -gt 3 ]; then
    echo "usage: $0 PAGE.html OUT.png [WIDTH,HEIGHT]" >&2
    exit 2
fi
page=$1
out=$2
size=${3:-1280,2000}
[ -f "$page" ] || { echo "$0: no such file: $page" >&2; exit 2; }

chrome=${CHROMIUM:-}
if [ -z "$chrome" ]; then
    for c in chromium chromium-browser google-chrome; do
        if command -v "$c" >/dev/null 2>&1; then chrome=$(command -v "$c"); break; fi
    done
fi
if [ -z "$chrome" ] || [ ! -x "$chrome" ]; then
    echo "$0: Chromium not found (apt-get install chromium, or set CHROMIUM)" >&2
    exit 77
fi

url="file://$(cd "$(dirname "$page")" && pwd)/$(basename "$page")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

run_chrome() {
    local profile
    profile=$(mktemp -d "$work/profile.XXXXXX")
    timeout 90 "$chrome" --headless --no-sandbox --disable-gpu --disable-quic \
        --no-first-run --disable-background-networking --disable-component-update \
        --disable-sync --disable-extensions --disable-dev-shm-usage \
        --user-data-dir="$profile" "$@"
}

# 1. Load the page with console logging on; keep the DOM it ended with.
run_chrome --enable-logging=stderr --v=0 --virtual-time-budget=2000 \
    --dump-dom "$url" >"$work/dom.html" 2>"$work/log.txt" || {
    echo "$0: chromium failed to load $url:" >&2
    cat "$work/log.txt" >&2
    exit 1
}
status=0
# Console messages (errors, CSP violations, uncaught exceptions) appear as
# ...:INFO:CONSOLE:N] "message" (older builds: CONSOLE(N)] ... source: URL).
if grep -E ':CONSOLE[:(]?[0-9]*\)?\]|Uncaught|Content Security Policy' "$work/log.txt" >"$work/console.txt"; then
    echo "$0: console messages while loading $page:" >&2
    cat "$work/console.txt" >&2
    status=1
fi
if ! grep -q '</html>' "$work/dom.html"; then
    echo "$0: the page did not load (no DOM dumped)" >&2
    status=1
fi
if grep -qi '<script' "$work/dom.html"; then
    echo "$0: the loaded page contains a <script> element" >&2
    status=1
fi

# 2. The screenshot.
mkdir -p "$(dirname "$out")"
rm -f "$out"
run_chrome --hide-scrollbars --window-size="$size" --screenshot="$out" "$url" \
    >/dev/null 2>"$work/shot.txt" || true
if [ ! -s "$out" ]; then
    echo "$0: no screenshot written:" >&2
    cat "$work/shot.txt" >&2
    status=1
else
    echo "screenshot: $out"
fi
exit $status
