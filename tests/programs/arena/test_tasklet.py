"""pytest suite over tasklet (tests/it/arena.rs): one leaky test, one fixed."""
import tasklet


def work():
    return sum([1, 2, 3])


def test_run_leaky():
    for _ in range(3):
        assert tasklet.run(work) == 6


def test_run_fixed():
    for _ in range(3):
        assert tasklet.run_fixed(work) == 6


def _arena_stats():
    try:
        import leakgate_probe  # on PYTHONPATH under `leakgate run`
    except ImportError:
        return None
    return leakgate_probe.arena_stats()


def test_deep_recursion():
    # CPython's own chunks: a recursion deep enough to need more chunks,
    # which the interpreter frees when the recursion returns.
    def down(n):
        return 0 if n == 0 else 1 + down(n - 1)

    before = _arena_stats()
    assert down(300) == 300
    after = _arena_stats()
    if before is not None:  # the probe's arena wrapper is installed
        made, freed, _, live = (a - b for a, b in zip(after, before))
        assert made >= 1 and freed == made and live == 0, (before, after)
