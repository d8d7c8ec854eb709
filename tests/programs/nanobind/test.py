"""Driver of tests/it/rust_ext.rs: imports the extension named by argv[1]
(nbext) from this directory and calls each of its leaky
functions once, their fixed twins when RUST_EXT_FIXED=1. Prints `ok`."""
import importlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
mod = importlib.import_module(sys.argv[1])
fixed = os.environ.get("RUST_EXT_FIXED") == "1"
for name in sorted(dir(mod)):
    if name.startswith("leak_"):
        getattr(mod, name)(fixed)
print("ok")
