"""pytest suite over gcext (tests/it/gc_leaks.rs): one leaky test, and
correct tests that keep objects alive on purpose."""
import gcext


def test_pack_leaky():
    for _ in range(3):
        assert len(gcext.pack_pair()) == 2


def test_pack_fixed():
    for _ in range(3):
        assert len(gcext.pack_pair_fixed()) == 2


def test_keepers():
    for i in range(3):
        assert gcext.cached(i % 2) == [0.5, 1.5]
        assert gcext.register_item([i]) == i + 1
        gcext.remember({"i": i})
