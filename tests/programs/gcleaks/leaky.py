"""Calls the leaky pack_pair() (and the correct keepers) from a plain script."""
import sys

import gcext

fixed = "--fixed" in sys.argv
for i in range(5):
    t = gcext.pack_pair_fixed() if fixed else gcext.pack_pair()
    del t
    gcext.cached(i % 2)
    gcext.register_item([i])
    gcext.remember({"i": i})
print("done")
