#!/usr/bin/env bash
# dist/build-wheels.sh - build leakgate's manylinux2014 (glibc 2.17) wheels
# with maturin and zig, and check them (docs/building-wheels.md).
#
# usage: dist/build-wheels.sh [--arch x86_64|aarch64|all] [--require-aarch64]
#                             [--python PY] [--target-dir DIR] OUT_DIR
#
#   --arch             which wheels (default: all)
#   --require-aarch64  fail, instead of skipping, when the aarch64 toolchain
#                      is missing
#   --python PY        the Python with maturin, ziglang and auditwheel
#                      (default: $LEAKGATE_TEST_PYTHON, else .venv/bin/python,
#                      else python3)
#   --target-dir DIR   cargo's target directory (default: $CARGO_TARGET_DIR,
#                      else target/)
#
# Each wheel is built with `maturin build --release --zig --compatibility
# manylinux2014 --target <triple>`; zig links against glibc 2.17 stubs, so
# the binary needs nothing newer wherever it was built. Then, for each wheel:
#   * the file name must carry manylinux_2_17_<arch> (or manylinux2014_<arch>),
#   * `auditwheel show` must find it consistent with manylinux_2_17_<arch>,
#   * the highest GLIBC_x.y version the `leakgate` executable needs
#     (readelf -V) must be <= 2.17,
# and its path and size are printed, one `wheel: PATH (N bytes)` line each.
#
# aarch64 needs a rustc with the aarch64-unknown-linux-gnu standard library:
# rustup's (`rustup target add aarch64-unknown-linux-gnu`), or Debian's
# rustc-web with libstd-rust-web-dev:arm64 (dist/debian-aarch64-std.sh).
# $RUSTC, when set, names the rustc to try first. Without one the aarch64
# wheel is skipped with a message (an error with --require-aarch64). When
# qemu-aarch64-static and an arm64 glibc (/lib/ld-linux-aarch64.so.1) are
# present, the aarch64 executable is also run (`leakgate --version`, and
# `leakgate analyze` on a recorded fixture).
set -euo pipefail

usage() {
    sed -n '4,10p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
arch=all
require_aarch64=0
py=""
target_dir="${CARGO_TARGET_DIR:-}"
out=""
while [ $# -gt 0 ]; do
    case "$1" in
        --arch)
            arch=${2:?--arch needs a value}
            shift 2
            ;;
        --arch=*)
            arch=${1#--arch=}
            shift
            ;;
        --require-aarch64)
            require_aarch64=1
            shift
            ;;
        --python)
            py=${2:?--python needs a value}
            shift 2
            ;;
        --target-dir)
            target_dir=${2:?--target-dir needs a value}
            shift 2
            ;;
        -h | --help) usage ;;
        -*)
            echo "unknown option: $1" >&2
            usage
            ;;
        *)
            [ -z "$out" ] || usage
            out=$1
            shift
            ;;
    esac
done
[ -n "$out" ] || usage
case "$arch" in
    x86_64) arches=(x86_64) ;;
    aarch64) arches=(aarch64) ;;
    all) arches=(x86_64 aarch64) ;;
    *)
        echo "--arch must be x86_64, aarch64 or all, not $arch" >&2
        exit 2
        ;;
esac

# rustup's default location, in case the login profile was not sourced.
if [ -d "${HOME:-/root}/.cargo/bin" ]; then
    export PATH="${HOME:-/root}/.cargo/bin:$PATH"
fi

if [ -z "$py" ]; then
    if [ -n "${LEAKGATE_TEST_PYTHON:-}" ]; then
        py=$LEAKGATE_TEST_PYTHON
    elif [ -x "$root/.venv/bin/python" ]; then
        py=$root/.venv/bin/python
    else
        py=python3
    fi
fi
for mod in maturin ziglang auditwheel; do
    if ! "$py" -c "import $mod" >/dev/null 2>&1; then
        echo "error: $py cannot import $mod (pip install maturin ziglang auditwheel)" >&2
        exit 1
    fi
done
command -v readelf >/dev/null || {
    echo "error: readelf (binutils) is missing" >&2
    exit 1
}

mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/leakgate-wheels.XXXXXX")
trap 'rm -rf "$work"' EXIT

# zig from the ziglang package of that Python, found first on PATH by
# maturin (cargo-zigbuild).
mkdir -p "$work/bin"
printf '#!/bin/sh\nexec "%s" -m ziglang "$@"\n' "$py" >"$work/bin/zig"
chmod +x "$work/bin/zig"
export PATH="$work/bin:$PATH"
echo "maturin $("$py" -m maturin --version | awk 'NR==1{print $2}'), zig $(zig version)," \
    "auditwheel $("$py" -m auditwheel --version | awk 'NR==1{print $2}')" >&2

# A rustc with the standard library for $1 (a target triple), or nothing.
rustc_for() {
    local triple=$1 c sysroot
    for c in ${RUSTC:-} rustc /usr/bin/rustc; do
        command -v "$c" >/dev/null 2>&1 || continue
        sysroot=$("$c" --print sysroot 2>/dev/null) || continue
        if [ -d "$sysroot/lib/rustlib/$triple/lib" ]; then
            command -v "$c"
            return 0
        fi
    done
    return 1
}

# The highest GLIBC_x.y among the version needs of ELF file $1.
glibc_max() {
    readelf -V -W "$1" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' |
        sort -t. -k1,1n -k2,2n -k3,3n | tail -n1
}

# 0 if version $1 <= $2 (x.y[.z]).
version_le() {
    [ "$(printf '%s\n%s\n' "$1" "$2" | sort -t. -k1,1n -k2,2n -k3,3n | head -n1)" = "$1" ]
}

status=0
for a in "${arches[@]}"; do
    triple=$a-unknown-linux-gnu
    echo "== $a ($triple)" >&2
    if ! rustc=$(rustc_for "$triple"); then
        msg="no rustc with the $triple standard library (rustup target add $triple, or dist/debian-aarch64-std.sh)"
        if [ "$a" = aarch64 ] && [ "$require_aarch64" = 0 ]; then
            echo "SKIP: aarch64 wheel: $msg" >&2
            continue
        fi
        echo "error: $a wheel: $msg" >&2
        status=1
        continue
    fi
    echo "rustc: $rustc ($("$rustc" --version))" >&2

    dest="$work/$a"
    mkdir -p "$dest"
    args=(build --release --zig --compatibility manylinux2014 --target "$triple" --out "$dest")
    if [ -n "$target_dir" ]; then args+=(--target-dir "$target_dir"); fi
    start=$(date +%s)
    if ! (cd "$root" && RUSTC="$rustc" "$py" -m maturin "${args[@]}"); then
        echo "error: maturin build failed for $triple" >&2
        status=1
        continue
    fi
    secs=$(($(date +%s) - start))
    wheels=("$dest"/*.whl)
    if [ "${#wheels[@]}" -ne 1 ] || [ ! -f "${wheels[0]}" ]; then
        echo "error: expected one wheel in $dest, found: ${wheels[*]}" >&2
        status=1
        continue
    fi
    whl=${wheels[0]}
    name=$(basename "$whl")

    # 1. the tag in the file name
    case "$name" in
        *manylinux_2_17_"$a"* | *manylinux2014_"$a"*) ;;
        *)
            echo "error: $name is not tagged manylinux_2_17_$a / manylinux2014_$a" >&2
            status=1
            continue
            ;;
    esac

    # 2. auditwheel's verdict
    show=$("$py" -m auditwheel show "$whl" 2>&1) || {
        echo "$show" >&2
        echo "error: auditwheel show failed on $name" >&2
        status=1
        continue
    }
    # shellcheck disable=SC2001 # a prefix on every line
    echo "$show" | sed 's/^/  auditwheel: /' >&2
    # "... is consistent with the following platform tag: "manylinux_2_17_x86_64"."
    verdict=$(echo "$show" | tr '\n' ' ' | sed -n 's/.*consistent with the following platform tag: *"\([^"]*\)".*/\1/p')
    if [ "$verdict" != "manylinux_2_17_$a" ]; then
        echo "error: auditwheel says ${verdict:-nothing} for $name, not manylinux_2_17_$a" >&2
        status=1
        continue
    fi

    # 3. the executable's GLIBC needs
    "$py" - "$whl" "$dest/leakgate" <<'PY'
import sys, zipfile
whl, dst = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(whl) as z:
    names = [n for n in z.namelist() if n.endswith(".data/scripts/leakgate")]
    if len(names) != 1:
        sys.exit(f"{whl}: expected one .data/scripts/leakgate, found {names}")
    with z.open(names[0]) as src, open(dst, "wb") as out:
        out.write(src.read())
PY
    gmax=$(glibc_max "$dest/leakgate")
    if [ -z "$gmax" ] || ! version_le "$gmax" 2.17; then
        echo "error: $name: leakgate needs GLIBC_${gmax:-?} (more than 2.17)" >&2
        status=1
        continue
    fi
    echo "  max GLIBC symbol version: GLIBC_$gmax" >&2

    # 4. aarch64: run it under qemu when possible
    if [ "$a" = aarch64 ]; then
        if command -v qemu-aarch64-static >/dev/null && [ -e /lib/ld-linux-aarch64.so.1 ]; then
            chmod +x "$dest/leakgate"
            v=$(qemu-aarch64-static -L / "$dest/leakgate" --version | head -n1) || {
                echo "error: $name: leakgate --version failed under qemu-aarch64-static" >&2
                status=1
                continue
            }
            echo "  under qemu-aarch64-static: $v" >&2
            # analyze on a recorded fixture: exit 1 (its leaks fail the gate)
            # and the bundled suppressions loaded.
            rc=0
            json=$(qemu-aarch64-static -L / "$dest/leakgate" analyze --format json \
                "$root/fixtures/recorded/leak_kinds.xml") || rc=$?
            if [ "$rc" != 1 ] || ! echo "$json" | "$py" -c '
import json, sys
r = json.load(sys.stdin)["summary"]
assert r["records"] == 7 and r["suppressed"]["loaded"] > 100, r'; then
                echo "error: $name: leakgate analyze under qemu-aarch64-static (exit $rc)" >&2
                status=1
                continue
            fi
            echo "  under qemu-aarch64-static: leakgate analyze on fixtures/recorded/leak_kinds.xml: exit 1, 7 records" >&2
        else
            echo "  (not run: no qemu-aarch64-static or arm64 glibc)" >&2
        fi
    fi

    mv -f "$whl" "$out/$name"
    echo "  built in ${secs}s" >&2
    echo "wheel: $out/$name ($(stat -c %s "$out/$name") bytes)"
done
exit "$status"
