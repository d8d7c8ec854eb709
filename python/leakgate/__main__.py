"""``python -m leakgate ARGS...``: runs the installed ``leakgate`` executable."""

import os
import sys

from leakgate import executable


def main():
    try:
        exe = executable()
    except FileNotFoundError as e:
        sys.stderr.write(f"leakgate: error: {e}\n")
        return 2
    os.execv(exe, [exe, *sys.argv[1:]])
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
