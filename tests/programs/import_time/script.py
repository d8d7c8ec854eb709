"""Imports impext and calls it; `fail` also takes the error path once."""
import sys

import impext

assert impext.__version__ == "1.2.3"
for _ in range(3):
    impext.fine()
if "fail" in sys.argv[1:]:
    try:
        impext.fail_once(7)
    except ValueError:
        pass
