"""leakgate: find memory leaks and memory errors in native extensions with
Valgrind Memcheck, and tell yours from interpreter and runtime noise.

The tool is the ``leakgate`` command that ``pip install pyleakgate`` puts on the
environment's PATH (``leakgate run -- python -m pytest tests/``); see its
README and docs/. This package only finds that executable (``python -m leakgate ...``
runs it when the environment's ``bin`` directory is not on PATH) and
re-exports the checkpoint probe of ``leakgate_probe``.
"""

import os
import shutil
import sys
import sysconfig

__all__ = ["executable", "checkpoint"]


def executable():
    """Path of the ``leakgate`` executable installed with this package."""
    candidates = []
    for scheme in (None, f"{os.name}_user"):
        try:
            scripts = sysconfig.get_path("scripts", scheme) if scheme else sysconfig.get_path("scripts")
        except KeyError:
            continue
        if scripts:
            candidates.append(os.path.join(scripts, "leakgate"))
    # Next to the interpreter (a venv's bin/), then PATH.
    candidates.append(os.path.join(os.path.dirname(sys.executable), "leakgate"))
    found = shutil.which("leakgate")
    if found:
        candidates.append(found)
    for path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise FileNotFoundError("the leakgate executable is not installed next to this Python package")


try:
    from leakgate_probe import checkpoint  # noqa: E402,F401
except ImportError:  # pragma: no cover - an installation without the probe

    def checkpoint(label):
        """No-op: the leakgate_probe helper is not installed."""
        return None
