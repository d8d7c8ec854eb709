"""outcomes_check.py - pytest outcomes under the leakgate plugin (run by
tests/it/per_test.rs with -x -k "not never" --repeat 2; not collected by a plain
`pytest` run, whose default pattern is test_*.py): a skipped test, a test that
reads past the end of a block (a memory error, not a failure), a test that
leaks and then fails (-x stops there), a deselected test and one never reached.
"""
import pytest

import leakext


@pytest.mark.skip(reason="skipped on purpose")
def test_skipped():
    leakext.leak_malloc()


def test_reads_past_end():
    leakext.read_past_end()


def test_leaks_then_fails():
    leakext.leak_malloc()
    assert False, "fails on purpose"


def test_never_selected():
    leakext.leak_malloc()


def test_not_reached():
    leakext.leak_malloc()
