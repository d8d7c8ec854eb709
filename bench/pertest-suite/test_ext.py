"""test_ext.py - bench/pertest.sh's larger suite: the tests over `leakext` with
the known findings (each test also does some clean work, so that test time,
not interpreter start-up, dominates under Valgrind):

  test_leaks_per_call        leakext.leak_malloc(): 48 bytes definitely lost
  test_fills_cache           leakext.fill_cache(): 256 bytes still reachable
  test_error_path[bad]       leakext.error_path_leak(True): 40 bytes definitely
                             lost (the other two parameters leak nothing)
  test_uninit_branch         leakext.uninit_branch(): an UninitCondition whose
                             origin is a malloc (what `--origins auto` re-runs for)

Every other test is clean. Passes under plain python.
"""
import pytest

import leakext

CALLS = 2000


def _churn(calls=CALLS):
    for _ in range(calls):
        leakext.clean()


def test_clean_loop():
    _churn(2 * CALLS)


def test_leaks_per_call():
    _churn()
    leakext.leak_malloc()


def test_fills_cache():
    leakext.fill_cache()
    _churn()


@pytest.mark.parametrize("case", ["ok", "bad", "empty"])
def test_error_path(case):
    _churn(CALLS // 2)
    try:
        leakext.error_path_leak(case == "bad")
    except ValueError:
        assert case == "bad"
    else:
        assert case != "bad"


def test_uninit_branch():
    _churn()
    assert leakext.uninit_branch() in (0, 1)
