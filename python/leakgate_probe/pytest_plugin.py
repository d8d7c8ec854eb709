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
``LEAKGATE_ONLY_TESTS`` (node ids, one per line) deselects every other test;
``LEAKGATE_CHECKPOINTS=0`` takes no checkpoints (leakgate's re-run of
``--origins auto`` sets both: it wants the origins of errors only).
``LEAKGATE_RUNNING_DIR`` (a directory) gets a file per process naming the
test it is running, removed when the test ends: the test a crash was in.
``LEAKGATE_TIMEOUT_FACTOR=F`` relaxes deadlines that assume native speed
(hypothesis' ``deadline``, pytest-timeout's timeouts ×F) once the session is
collected (``leakgate_probe.deadlines``; ``LEAKGATE_KEEP_DEADLINES=1`` keeps
them).

Without Valgrind (plain ``pytest``) the plugin does nothing. It can be
registered once only, under the name ``leakgate`` (the ``pytest11`` entry
point) or through ``leakgate_probe.autoload`` (what leakgate passes),
whichever comes first.

Under pytest-xdist (``-n N``) the workers are Valgrind's traced children:
each runs this plugin for the tests it is given, and every test marker
carries the test's index in the collected session, so that leakgate can
list them in the order of a serial run. With ``LEAKGATE_FORK_WORKERS=N``
(leakgate's ``-n N`` under Valgrind) this process forks the workers itself
once the session is collected (``leakgate_probe.forked_workers``).
"""

import os
import sys

try:
    import pytest

    _hookimpl = pytest.hookimpl
except ImportError:  # imported without pytest: nothing will call the hooks

    def _hookimpl(**_kw):
        return lambda f: f


import leakgate_probe as _probe


def _enabled():
    return os.environ.get("LEAKGATE_PER_TEST", "1") != "0" and _probe.available()


def _checkpoints():
    # LEAKGATE_CHECKPOINTS=0: select tests (LEAKGATE_ONLY_TESTS) only.
    return _enabled() and os.environ.get("LEAKGATE_CHECKPOINTS", "1") != "0"


def _env_count(name, least):
    """An environment variable as a count of at least ``least``."""
    try:
        return max(least, int(os.environ.get(name, str(least))))
    except ValueError:
        return least


def _fork_workers():
    """``LEAKGATE_FORK_WORKERS``: workers to fork after collection, or 0."""
    return _env_count("LEAKGATE_FORK_WORKERS", 0)


def _repeat():
    return _env_count("LEAKGATE_REPEAT", 1)


@_hookimpl(optionalhook=True)
def pytest_xdist_setupnodes(config, specs):
    # pytest-xdist's controller, run natively by leakgate: every local
    # worker starts under Valgrind (LEAKGATE_XDIST_WORKERS is leakgate's
    # valgrind command), so its tests are checked and checkpointed there.
    prefix = os.environ.get("LEAKGATE_XDIST_WORKERS")
    if not prefix or _probe.available():
        return
    import shlex
    import sys

    for spec in specs:
        if getattr(spec, "popen", False) and not getattr(spec, "via", None):
            python = spec.python or shlex.quote(sys.executable)
            spec.python = prefix + " " + python


@_hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    if not _enabled():
        return
    # Every conftest is loaded and --hypothesis-profile applied: deadlines
    # that assume native speed are relaxed (LEAKGATE_TIMEOUT_FACTOR).
    from leakgate_probe import deadlines

    config._leakgate_relaxed = deadlines.relax(config, items)
    # LEAKGATE_ONLY_TESTS (node ids, one per line): leakgate re-runs just
    # these tests (the origins of `--origins auto`); the rest is deselected.
    only = os.environ.get("LEAKGATE_ONLY_TESTS")
    if not only:
        return
    keep = set(only.splitlines())
    selected = [it for it in items if it.nodeid in keep]
    deselected = [it for it in items if it.nodeid not in keep]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = selected


def pytest_report_collectionfinish(config, items):
    # What the plugin relaxed, under pytest's "collected N items".
    return getattr(config, "_leakgate_relaxed", None) or None


@_hookimpl(tryfirst=True)
def pytest_runtestloop(session):
    # Everything collection imported and allocated is the "start" snapshot's.
    if _checkpoints() and not session.config.option.collectonly:
        # `-n N` under leakgate's Valgrind engine: N workers forked from
        # this process, which has started and collected (forked_workers).
        n = _fork_workers()
        errors = session.testsfailed and not session.config.option.continue_on_collection_errors
        fork = n >= 2 and len(session.items) >= 2 and not errors
        if fork:
            from leakgate_probe import forked_workers

            forked_workers.prepare(session)  # before the baseline
        _probe.checkpoint("collection", kind="start")
        if fork:
            return forked_workers.run(session, n)
    return None


def _index(item):
    """The item's position in the collected session: pytest-xdist workers
    all collect the whole session, so it is the same in every worker."""
    session = item.session
    idx = getattr(session, "_leakgate_index", None)
    fixed = getattr(session, "_leakgate_index_fixed", False)  # a forked worker's
    if idx is None or (len(idx) != len(session.items) and not fixed):
        idx = {it.nodeid: i for i, it in enumerate(session.items)}
        session._leakgate_index = idx
    return idx.get(item.nodeid)


@_hookimpl(tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    forked = sys.modules.get("leakgate_probe.forked_workers")
    if forked is not None and forked.should_stop():  # a worker: the session stops (-x)
        item.session.shouldstop = "stopped by leakgate: the session stops (-x or --maxfail)"
        return True
    if not _checkpoints():
        return None
    from _pytest.runner import runtestprotocol

    n = _repeat()
    _running(item.nodeid)
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    for i in range(n):
        # nextitem as given: fixtures that the next test does not share are
        # torn down after every repetition, and set up again for the next.
        runtestprotocol(item, log=True, nextitem=nextitem)
        _probe.checkpoint(item.nodeid, kind="test", rep=i + 1, of=n, index=_index(item))
        if item.session.shouldfail or item.session.shouldstop:
            break
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    _running(None)
    return True


def _running(nodeid):
    """``LEAKGATE_RUNNING_DIR/<pid>``: the test this process is running
    (written at its start, removed at its end), so that leakgate can name
    the test a process was in when a signal killed it."""
    where = os.environ.get("LEAKGATE_RUNNING_DIR")
    if not where:
        return
    path = os.path.join(where, str(os.getpid()))
    try:
        if nodeid is None:
            os.unlink(path)
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(nodeid)
    except OSError:
        pass


@_hookimpl(trylast=True)
def pytest_sessionfinish(session):
    # After the runner's own sessionfinish tore down what was left.
    if _checkpoints():
        _probe.checkpoint("session finish", kind="finish")
