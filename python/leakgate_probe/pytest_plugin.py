"""leakgate's pytest plugin: a leak checkpoint after every test.

Under ``leakgate run -- python -m pytest ...`` (which enables this plugin)
every test item is followed by ``leakgate_probe.checkpoint(nodeid)``: after
its setup, call and teardown, including the module, class and session
fixtures torn down with it. One checkpoint is taken before the first test
(what collection and imports allocated) and one at the end of the session.
leakgate ties each leak to the test it grew in.

``LEAKGATE_REPEAT=N`` (``leakgate run --repeat N``) runs every selected
test N times in a row, each run followed by a checkpoint, so that a leak
that grows at every call can be told from a one-time allocation.

Without Valgrind (plain ``pytest``) the plugin does nothing. It can be
registered once only, under the name ``leakgate`` (the ``pytest11`` entry
point) or through ``leakgate_probe.autoload`` (what leakgate passes),
whichever comes first.
"""

import os

try:
    import pytest

    _hookimpl = pytest.hookimpl
except ImportError:  # imported without pytest: nothing will call the hooks

    def _hookimpl(**_kw):
        return lambda f: f


import leakgate_probe as _probe


def _enabled():
    return os.environ.get("LEAKGATE_PER_TEST", "1") != "0" and _probe.available()


def _repeat():
    try:
        return max(1, int(os.environ.get("LEAKGATE_REPEAT", "1")))
    except ValueError:
        return 1


@_hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    # Everything collection imported and allocated is the "start" snapshot's.
    if _enabled() and not session.config.option.collectonly:
        _probe.checkpoint("collection", kind="start")


@_hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    if not _enabled():
        return None
    from _pytest.runner import runtestprotocol

    n = _repeat()
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    for i in range(n):
        # nextitem as given: fixtures that the next test does not share are
        # torn down after every repetition, and set up again for the next.
        runtestprotocol(item, log=True, nextitem=nextitem)
        _probe.checkpoint(item.nodeid, kind="test", rep=i + 1, of=n)
        if item.session.shouldfail or item.session.shouldstop:
            break
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True


@_hookimpl(trylast=True)
def pytest_sessionfinish(session):
    # After the runner's own sessionfinish tore down what was left.
    if _enabled():
        _probe.checkpoint("session finish", kind="finish")
