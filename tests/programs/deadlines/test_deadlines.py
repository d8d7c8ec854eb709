"""test_deadlines.py - tests that pass natively (a few ms of work each) and
fail under Valgrind unless leakgate relaxes their deadlines: hypothesis'
deadline of the profile, one set on the test, and a pytest-timeout timeout.
Each test's work is pure Python: about 100 times slower under Memcheck."""
import pytest
from hypothesis import given, settings, strategies as st

EXAMPLES = []


def work(n, rounds):
    x = 0
    for i in range(rounds):
        x += (i * n) % 7
    return x


@given(st.integers())
def test_profile_deadline(n):
    # ~2.5 ms natively, ~250 ms under Valgrind: past the profile's 100 ms deadline.
    EXAMPLES.append(n)
    work(n, 40_000)


@settings(deadline=50)
@given(st.integers())
def test_own_deadline(n):
    # ~1.2 ms natively, ~130 ms under Valgrind: past its own 50 ms deadline.
    work(n, 20_000)


def test_profile_kept():
    # The relaxed profile is derived from the suite's: still 5 examples.
    assert 0 < len(EXAMPLES) <= 5, len(EXAMPLES)


@pytest.mark.timeout(1)
def test_timeout():
    # ~17 ms natively, ~2 s under Valgrind: past its 1 s timeout.
    work(3, 300_000)
