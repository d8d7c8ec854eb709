#!/usr/bin/env bash
# dist/debian-aarch64-std.sh - install the Debian pieces that let
# dist/build-wheels.sh cross-build the aarch64 wheel (docs/building-wheels.md).
#
# rustup needs static.rust-lang.org for `rustup target add
# aarch64-unknown-linux-gnu`; where only Debian's mirrors are reachable this
# takes Debian 12's own Rust instead:
#   * rustc-web, cargo-web (bookworm-security: a rustc new enough for the
#     crate's rust-version; bookworm's plain `rustc` is 1.63),
#   * libstd-rust-web-dev:arm64 (the aarch64 standard library for that same
#     rustc, installed under /usr/lib/rustlib/aarch64-unknown-linux-gnu),
#   * qemu-user-static (optional, to run the aarch64 binary on x86-64).
# zig (the `ziglang` package from PyPI) links; no aarch64 gcc or sysroot is
# needed, since zig brings its own glibc 2.17 stubs.
#
# Idempotent: installs only what is missing; `apt-get update` runs only then.
# Prints the rustc to use (RUSTC=...) on the last line of stdout.
# Runs as root, or with passwordless sudo. Debian/Ubuntu only.
set -euo pipefail
exec </dev/null
export DEBIAN_FRONTEND=noninteractive

SUDO=()
if [ "$(id -u)" -ne 0 ]; then SUDO=(sudo -n); fi

want_qemu=1
for a in "$@"; do
    case "$a" in
        --no-qemu) want_qemu=0 ;;
        -h | --help)
            sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
            echo "usage: $0 [--no-qemu]"
            exit 0
            ;;
        *)
            echo "unknown argument: $a" >&2
            exit 2
            ;;
    esac
done

command -v dpkg >/dev/null 2>&1 || {
    echo "error: needs dpkg/apt (Debian or Ubuntu)" >&2
    exit 1
}

if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    echo "adding the arm64 architecture to dpkg" >&2
    "${SUDO[@]}" dpkg --add-architecture arm64
    need_update=1
fi

pkgs=(rustc-web cargo-web libstd-rust-web-dev:arm64)
if [ "$want_qemu" = 1 ]; then pkgs+=(qemu-user-static); fi
missing=()
for p in "${pkgs[@]}"; do
    # dpkg -s on an absent package exits non-zero; "install ok installed" otherwise.
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done

if [ "${#missing[@]}" -gt 0 ] || [ "${need_update:-0}" = 1 ]; then
    echo "installing: ${missing[*]:-(none; refreshing the index)}" >&2
    "${SUDO[@]}" apt-get update -q >&2
    if [ "${#missing[@]}" -gt 0 ]; then
        "${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" >&2
    fi
else
    echo "all present: ${pkgs[*]}" >&2
fi

# The host rustc and the arm64 std must be the same build.
host_v=$(dpkg-query -W -f='${Version}' rustc-web)
arm_v=$(dpkg-query -W -f='${Version}' libstd-rust-web-dev:arm64)
if [ "$host_v" != "$arm_v" ]; then
    echo "error: rustc-web $host_v but libstd-rust-web-dev:arm64 $arm_v;" \
        "run apt-get install rustc-web libstd-rust-web-dev:arm64 to align them" >&2
    exit 1
fi

rustc=""
for c in /usr/bin/rustc-web /usr/lib/rust-web/bin/rustc; do
    if [ -x "$c" ]; then
        rustc=$c
        break
    fi
done
if [ -z "$rustc" ]; then
    rustc=$(dpkg -L rustc-web | grep -E '/bin/rustc[^/]*$' | head -n1)
fi
"$rustc" --version >&2
if [ ! -d "$("$rustc" --print sysroot)/lib/rustlib/aarch64-unknown-linux-gnu/lib" ]; then
    echo "error: $rustc has no aarch64-unknown-linux-gnu std under $("$rustc" --print sysroot)" >&2
    exit 1
fi
echo "RUSTC=$rustc"
