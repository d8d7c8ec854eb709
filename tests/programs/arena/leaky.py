"""Runs 20 tasklets from a plain script (``--fixed``: run_fixed)."""
import sys

import tasklet


def inner(i):
    return [i, i + 1]


def work(i):
    # A nested Python call: a second frame in the tasklet's chunk.
    return sum(inner(i))


fixed = "--fixed" in sys.argv
run = tasklet.run_fixed if fixed else tasklet.run
total = 0
for i in range(20):
    total += run(lambda: work(i))
print("done", total)
