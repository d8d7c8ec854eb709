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
``LEAKGATE_SHARD=K/N`` keeps the K-th of N contiguous parts of the
collected tests (``LEAKGATE_SHARD_DURATIONS``: balanced by an earlier
report's durations), which keep their indexes in the whole session;
``LEAKGATE_DURATIONS_DIR`` gets each test's seconds, a file per process.
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
import time

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
    # At the end the controller gives each worker EXIT_TIMEOUT seconds (10)
    # to exit before it kills it; a worker under Valgrind then still runs
    # its final leak check, which takes longer on a loaded machine, and a
    # killed one leaves a truncated report (the run incomplete).
    try:
        from xdist import workermanage

        manager = workermanage.NodeManager
        manager.EXIT_TIMEOUT = max(getattr(manager, "EXIT_TIMEOUT", 10), 300)
    except (ImportError, AttributeError):
        pass


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
        # LEAKGATE_SHARD=K/N (`leakgate run --shard K/N`): shard K of N.
        _shard(config, items)
        return
    keep = set(only.splitlines())
    selected = [it for it in items if it.nodeid in keep]
    deselected = [it for it in items if it.nodeid not in keep]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = selected


def _shard(config, items):
    """``LEAKGATE_SHARD=K/N``: keeps the K-th of N contiguous parts of the
    collected tests (balanced by ``LEAKGATE_SHARD_DURATIONS``, a JSON
    object of node ids' seconds from an earlier report, else by count).
    Every test keeps its index in the whole collected session, so that
    the shards' reports merge into the unsharded run's."""
    spec = os.environ.get("LEAKGATE_SHARD")
    if not spec:
        return
    try:
        k, n = (int(x) for x in spec.split("/"))
    except ValueError:
        return
    if not 1 <= k <= n or n == 1:
        return
    session = items[0].session if items else None
    if session is not None:
        session._leakgate_index = {it.nodeid: i for i, it in enumerate(items)}
        session._leakgate_index_fixed = True
    lo, hi = shard_bounds(_weights([it.nodeid for it in items]), n)[k - 1]
    selected, deselected = items[lo:hi], items[:lo] + items[hi:]
    config._leakgate_shard = (k, n, len(selected), len(items))
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = selected


def _weights(nodeids):
    """Each test's weight: its seconds in ``LEAKGATE_SHARD_DURATIONS``, the
    mean of those known for a test not in it (new since that report), 1
    for every test without any."""
    path = os.environ.get("LEAKGATE_SHARD_DURATIONS")
    known = {}
    if path:
        try:
            import json

            with open(path, encoding="utf-8") as f:
                known = {str(k): float(v) for k, v in json.load(f).items() if float(v) >= 0}
        except (OSError, ValueError, TypeError, AttributeError):
            known = {}
    timed = [known[t] for t in nodeids if t in known]
    if not timed or sum(timed) <= 0:
        return [1.0] * len(nodeids)
    mean = sum(timed) / len(timed)
    # A test too quick to time still costs its checkpoint.
    floor = max(mean / 100, 1e-6)
    return [max(known.get(t, mean), floor) for t in nodeids]


def shard_bounds(weights, n):
    """``n`` contiguous parts of ``weights`` (lists of (start, end)): part
    ``k`` ends where the running sum passes ``k/n`` of the total (a test
    belongs to the part its midpoint falls in), every part non-empty when
    there are at least ``n`` tests."""
    m, total = len(weights), float(sum(weights))
    if m < n:  # a test each, the last parts empty
        return [(min(k, m), min(k + 1, m)) for k in range(n)]
    cuts, prefix, i = [0], 0.0, 0
    for k in range(1, n):
        target = total * k / n
        while i < m and prefix + weights[i] / 2 < target:
            prefix += weights[i]
            i += 1
        cuts.append(min(max(i, cuts[-1] + 1), m - (n - k)))
    cuts.append(m)
    return [(cuts[k], cuts[k + 1]) for k in range(n)]


def pytest_report_collectionfinish(config, items):
    # What the plugin relaxed and which shard runs, under pytest's
    # "collected N items".
    lines = list(getattr(config, "_leakgate_relaxed", None) or [])
    shard = getattr(config, "_leakgate_shard", None)
    if shard is not None:
        k, n, mine, all_ = shard
        lines.append(f"leakgate: shard {k}/{n}: {mine} of the {all_} tests collected")
    return lines or None


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
    started = time.monotonic()
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
    _duration(item.nodeid, time.monotonic() - started)
    return True


def _duration(nodeid, seconds):
    """``LEAKGATE_DURATIONS_DIR/<pid>``: a line per test, its seconds (its
    repetitions and checkpoints included) and node id, for the report's
    ``per_test.durations`` (what ``--shard-durations`` balances by)."""
    where = os.environ.get("LEAKGATE_DURATIONS_DIR")
    if not where:
        return
    try:
        with open(os.path.join(where, str(os.getpid())), "a", encoding="utf-8") as f:
            f.write(f"{seconds:.6f}\t{nodeid}\n")
    except OSError:
        pass


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
    shard = getattr(session.config, "_leakgate_shard", None)
    if shard is not None and shard[2] == 0 and session.exitstatus == 5:
        # A shard left without tests (fewer tests than shards) ran nothing,
        # which is not pytest's "no tests collected".
        session.exitstatus = 0
