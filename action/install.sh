#!/usr/bin/env bash
# action/install.sh - the "Install Valgrind and leakgate" step of leakgate's
# GitHub Action (action.yml; docs/github-action.md).
#
# Inputs (INPUT_* variables, set by the step):
#   INPUT_INSTALL           auto | pip | cargo | none (default auto)
#   INPUT_LEAKGATE_VERSION  a version (0.1.0 or v0.1.0), or the path of a
#                           leakgate wheel file; default: the version of the
#                           action's own checkout (its Cargo.toml)
#   INPUT_INSTALL_VALGRIND  true: apt-get install valgrind when it is missing
# Other variables: ACTION_PATH (the action's checkout; default the directory
# above this script), RUNNER_TEMP (where leakgate is installed; default a
# new temporary directory), GITHUB_PATH, GITHUB_OUTPUT.
#
# Where a released leakgate comes from (docs/install.md): the PyPI
# distribution `pyleakgate` (`leakgate` on PyPI is another project), or the
# tag vVERSION of LEAKGATE_REPOSITORY below.
# pip: `pip download` fetches the wheel of that version for this platform
# (or takes the given wheel file) and its `leakgate` executable (which holds
# everything: suppressions, the Python probe) is unpacked into
# $RUNNER_TEMP/leakgate/bin; nothing is installed into any Python
# environment. cargo: `cargo install --locked` into $RUNNER_TEMP/leakgate,
# from the action's own checkout when the version is its version, else
# the tag vVERSION of the repository. none: `leakgate` must be on PATH already.
# auto: a `leakgate` on PATH of the wanted version, else pip when there is
# a Python with pip, else (or when pip fails) cargo.
#
# Outputs: path (the leakgate executable), version (what it says it is).
# The directory of an executable installed here is added to GITHUB_PATH
# for later steps.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=action/lib.sh
. "$here/lib.sh"

action_path=${ACTION_PATH:-$(dirname "$here")}
tmp=${RUNNER_TEMP:-}
if [[ -z $tmp ]]; then
    tmp=$(mktemp -d)
fi
root=$tmp/leakgate
# The repository of Cargo.toml (`repository`); tests/it/docs.rs checks it.
LEAKGATE_REPOSITORY=https://github.com/leakgate/leakgate
mode=$(printf '%s' "${INPUT_INSTALL:-auto}" | tr '[:upper:]' '[:lower:]')
case $mode in
auto | pip | cargo | none) ;;
*)
    lg_error "input install: expected auto, pip, cargo or none, not '$INPUT_INSTALL'"
    exit 2
    ;;
esac
install_valgrind=$(to_bool "${INPUT_INSTALL_VALGRIND:-true}") || {
    lg_error "input install-valgrind: expected true or false, not '$INPUT_INSTALL_VALGRIND'"
    exit 2
}

# --- Valgrind ----------------------------------------------------------------

if command -v valgrind >/dev/null 2>&1; then
    echo "leakgate action: $(valgrind --version) at $(command -v valgrind)"
elif [[ $install_valgrind == true ]]; then
    if ! command -v apt-get >/dev/null 2>&1; then
        lg_error "valgrind is not installed and there is no apt-get to install it with: install Valgrind (3.19 or later) before this step"
        exit 2
    fi
    sudo=()
    if [[ $(id -u) != 0 ]]; then sudo=(sudo -n); fi
    echo "leakgate action: installing Valgrind with apt-get"
    "${sudo[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends valgrind
    echo "leakgate action: $(valgrind --version) at $(command -v valgrind)"
else
    lg_warning "valgrind is not on PATH and install-valgrind is false: leakgate will stop with exit 2 unless a later step installs it"
fi

# --- leakgate ----------------------------------------------------------------

wheel=''
version=${INPUT_LEAKGATE_VERSION:-}
if [[ $version == *.whl ]]; then
    wheel=$version
    version=''
    if [[ ! -f $wheel ]]; then
        lg_error "input leakgate-version: no such wheel file: $wheel"
        exit 2
    fi
fi
version=${version#v}
own_version=''
if [[ -f $action_path/Cargo.toml ]]; then
    own_version=$(sed -n 's/^version *= *"\([^"]*\)".*/\1/p' "$action_path/Cargo.toml" | head -n 1)
fi
if [[ -z $version && -z $wheel ]]; then
    version=$own_version
fi

python=$(command -v python3 || command -v python || true)

# The version a leakgate executable reports ("leakgate 0.1.0" -> 0.1.0).
version_of() {
    "$1" --version 2>/dev/null | head -n 1 | sed -n 's/^leakgate \([^ ]*\).*/\1/p'
}

# Unpacks the leakgate executable of the wheel $1 into $root/bin.
unpack_wheel() {
    local whl=$1
    mkdir -p "$root/bin"
    if [[ -n $python ]]; then
        "$python" - "$whl" "$root/bin/leakgate" <<'EOF'
import sys, zipfile
whl, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(whl) as z:
    names = [n for n in z.namelist() if n.endswith(".data/scripts/leakgate")]
    if not names:
        sys.exit(f"{whl}: no leakgate executable (*.data/scripts/leakgate) in this wheel")
    with z.open(names[0]) as src, open(dest, "wb") as out:
        out.write(src.read())
EOF
    elif command -v unzip >/dev/null 2>&1; then
        unzip -p "$whl" '*.data/scripts/leakgate' >"$root/bin/leakgate"
    else
        lg_error "cannot unpack $whl: neither python nor unzip is installed"
        return 1
    fi
    chmod 755 "$root/bin/leakgate"
}

install_pip() {
    if [[ -n $wheel ]]; then
        unpack_wheel "$wheel"
        return
    fi
    if [[ -z $python ]] || ! "$python" -m pip --version >/dev/null 2>&1; then
        echo "leakgate action: no Python with pip" >&2
        return 1
    fi
    if [[ -z $version ]]; then
        echo "leakgate action: no version to download (set leakgate-version)" >&2
        return 1
    fi
    local dl=$tmp/leakgate-wheel
    rm -rf "$dl"
    mkdir -p "$dl"
    "$python" -m pip download --quiet --disable-pip-version-check --no-deps \
        --only-binary=:all: --dest "$dl" "pyleakgate==$version" || return 1
    local whl
    whl=$(find "$dl" -name 'pyleakgate-*.whl' | head -n 1)
    [[ -n $whl ]] || return 1
    unpack_wheel "$whl"
}

install_cargo() {
    if ! command -v cargo >/dev/null 2>&1; then
        lg_error "cargo is not installed (install Rust, or use install: pip)"
        return 1
    fi
    if [[ -n $wheel ]]; then
        lg_error "install: cargo cannot install a wheel file ($wheel)"
        return 1
    fi
    if [[ -f $action_path/Cargo.toml && (-z $version || $version == "$own_version") ]]; then
        cargo install --locked --root "$root" --path "$action_path"
    else
        cargo install --locked --root "$root" --git "$LEAKGATE_REPOSITORY" --tag "v$version" leakgate
    fi
}

bin=''
case $mode in
none)
    bin=$(command -v leakgate || true)
    if [[ -z $bin ]]; then
        lg_error "install: none, but there is no leakgate on PATH"
        exit 2
    fi
    ;;
auto)
    found=$(command -v leakgate || true)
    if [[ -n $found && -z $wheel && (-z $version || $(version_of "$found") == "$version") ]]; then
        bin=$found
    elif install_pip; then
        bin=$root/bin/leakgate
    elif [[ -n $wheel ]]; then
        lg_error "cannot unpack the wheel $wheel"
        exit 2
    else
        echo "leakgate action: no leakgate $version wheel with pip: cargo install" >&2
        install_cargo || exit 2
        bin=$root/bin/leakgate
    fi
    ;;
pip)
    install_pip || {
        lg_error "pip could not get leakgate ${version:-$wheel}"
        exit 2
    }
    bin=$root/bin/leakgate
    ;;
cargo)
    install_cargo || exit 2
    bin=$root/bin/leakgate
    ;;
esac

got=$(version_of "$bin")
if [[ -z $got ]]; then
    lg_error "$bin does not run (leakgate --version)"
    exit 2
fi
if [[ -n $version && $got != "$version" ]]; then
    lg_warning "asked for leakgate $version, got $got ($bin)"
fi
echo "leakgate action: leakgate $got at $bin"
set_output path "$bin"
set_output version "$got"
if [[ -n ${GITHUB_PATH:-} && $bin == "$root"/* ]]; then
    dirname "$bin" >>"$GITHUB_PATH"
fi
