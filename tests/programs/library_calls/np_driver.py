"""np_driver.py - calls npext.ravel_leaky or npext.ravel_fixed (argv[1])
200 times on a transposed (non-contiguous) array, so that each call makes a
new array. Prints "ok"."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402

import npext  # noqa: E402

fn = getattr(npext, "ravel_" + sys.argv[1])
a = np.arange(12.0).reshape(3, 4).T
for _ in range(200):
    assert fn(a) == 12
print("ok")
