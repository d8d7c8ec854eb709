"""test_grow.py - a test whose container grows at every call: the blocks stay
reachable, but with --repeat they grow by 32 bytes per repetition, which
leakgate gates."""
import leakext


def test_grows_registry():
    leakext.grow_registry()
