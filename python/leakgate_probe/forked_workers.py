"""Test workers forked from one pytest process that started under Valgrind.

Under ``leakgate run -- python -m pytest -n N`` (Valgrind engine, per-test
checkpoints) leakgate runs pytest itself under Valgrind with ``-n 0`` and
``LEAKGATE_FORK_WORKERS=N``. Once the session is collected (and the
"start" checkpoint taken) this process forks N workers. A fork child keeps
Valgrind's translations and debug information, so no worker pays the start-up
of Python and pytest under Valgrind again; each writes its own XML report
(``%p``), and leakgate counts a leak a worker inherited from its parent once.

Worker ``k`` runs ``items[k::N]`` (the collected session's index stays on
every checkpoint, so that leakgate lists tests in the order of a serial run)
and sends what pytest's reporting needs back through a pipe: each test's
start, reports (``pytest_report_to_serializable``), finish and warnings.
The parent, which runs no test, feeds them to its own hooks, as
pytest-xdist's controller does: the terminal, ``--junitxml``, ``-x`` /
``--maxfail`` and the exit status see one session. The parent tells the
workers to stop when the session should stop (``-x``), and a worker that
dies in a test (a crash) fails that test. A worker has what a pytest-xdist
worker has for suites that keep workers apart: ``worker_id`` (``gw0``, ...),
``testrun_uid``, ``PYTEST_XDIST_WORKER``, and a ``tmp_path`` root of its own.
"""

import json
import os
import select
import signal
import sys
import uuid
import warnings

import pytest

_stop_fd = None  # in a worker: the read end of the parent's stop pipe


def should_stop():
    """In a worker: whether the parent asked the workers to stop."""
    if _stop_fd is None:
        return False
    try:
        ready, _, _ = select.select([_stop_fd], [], [], 0)
    except (OSError, ValueError):
        return False
    return bool(ready)


def run(session, n):
    """Forks ``n`` workers over ``session.items`` and replays what they
    report; returns True (the session ran) in the parent. In a worker it
    narrows ``session.items`` and returns None, so that pytest's own loop
    runs the worker's tests."""
    items = list(session.items)
    n = min(n, len(items))
    basetemp = getattr(session, "_leakgate_basetemp", None)
    uid = getattr(session.config.option, "testrunuid", None) or uuid.uuid4().hex
    # Index of the whole session: every worker's checkpoints carry it
    # (already fixed by a shard: the index of the session before it).
    if not getattr(session, "_leakgate_index_fixed", False):
        session._leakgate_index = {it.nodeid: i for i, it in enumerate(items)}
        session._leakgate_index_fixed = True
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    workers = []
    for k in range(n):
        mine = items[k::n]
        report_r, report_w = os.pipe()
        stop_r, stop_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(report_r)
            os.close(stop_w)
            for w in workers:
                for fd in (w["fd"], w["stop"]):
                    os.close(fd)
            _become_worker(session, mine, report_w, stop_r, basetemp, k, n, uid)
            return None
        os.close(report_w)
        os.close(stop_r)
        workers.append(
            {"k": k, "pid": pid, "fd": report_r, "stop": stop_w, "buf": b"", "running": None, "left": len(mine)}
        )
    _replay(session, workers, {it.nodeid: it for it in items})
    if session.shouldfail:
        raise session.Failed(session.shouldfail)
    if session.shouldstop:
        raise session.Interrupted(session.shouldstop)
    return True


def prepare(session):
    """Before the "start" checkpoint (what it allocates is the baseline's):
    the session's ``tmp_path`` root, in which every worker takes a directory
    of its own (as pytest-xdist's workers do)."""
    factory = getattr(session.config, "_tmp_path_factory", None)
    try:
        session._leakgate_basetemp = factory.getbasetemp() if factory is not None else None
    except Exception:
        session._leakgate_basetemp = None


def _become_worker(session, mine, fd, stop_fd, basetemp, k, n, uid):
    global _stop_fd
    _stop_fd = stop_fd
    config = session.config
    session.items[:] = mine
    # What a pytest-xdist worker has: `worker_id` (gw0, gw1, ...),
    # `testrun_uid` and PYTEST_XDIST_WORKER, which suites use to keep their
    # workers' resources apart.
    config.workerinput = {
        "workerid": f"gw{k}",
        "workercount": n,
        "testrunuid": uid,
        "mainargv": list(sys.argv),
    }
    config.workeroutput = {}
    os.environ["PYTEST_XDIST_TESTRUNUID"] = uid
    os.environ["PYTEST_XDIST_WORKER"] = f"gw{k}"
    os.environ["PYTEST_XDIST_WORKER_COUNT"] = str(n)
    if basetemp is not None:
        try:
            own = basetemp / f"popen-gw{k}"  # as pytest-xdist names it
            own.mkdir(exist_ok=True)
            config._tmp_path_factory._basetemp = own
        except Exception:
            pass
    out = os.fdopen(fd, "w", encoding="utf-8", buffering=1)
    _fresh_capture(config)
    _silence_terminal(config)
    _no_junitxml(config)
    config.pluginmanager.register(_Worker(config, out), "leakgate-forked-worker")


def _fresh_capture(config):
    # pytest's fd capture writes into temporary files whose offsets the
    # parent and every worker would share after the fork: a worker gets
    # its own (pytest keeps the global capture suspended between tests).
    capman = config.pluginmanager.get_plugin("capturemanager")
    method = getattr(capman, "_method", None)
    if capman is None or getattr(capman, "_global_capturing", None) is None or method == "no":
        return
    try:
        from _pytest.capture import _get_multicapture

        fresh = _get_multicapture(method)
        fresh.start_capturing()
        fresh.suspend_capturing()
        capman._global_capturing = fresh
    except Exception as e:  # a pytest without these internals: output may mix
        sys.stderr.write(f"leakgate: worker {os.getpid()} shares pytest's capture files ({e})\n")


def _silence_terminal(config):
    # The parent prints the session: a worker's own reporter writes nowhere.
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if tr is None:
        return
    try:
        from _pytest.config import create_terminal_writer

        tr._tw = create_terminal_writer(config, open(os.devnull, "w", encoding="utf-8"))
    except Exception:
        config.pluginmanager.unregister(tr)


def _no_junitxml(config):
    # The parent writes --junitxml from the reports it is sent.
    try:
        from _pytest.junitxml import xml_key
    except ImportError:
        return
    xml = config.stash.get(xml_key, None)
    if xml is not None:
        del config.stash[xml_key]
        config.pluginmanager.unregister(xml)


class _Worker:
    """A worker's side: what the parent's hooks need, as JSON lines."""

    def __init__(self, config, out):
        self.config = config
        self.out = out

    def send(self, event, **data):
        data["event"] = event
        try:
            self.out.write(json.dumps(data) + "\n")
        except (OSError, ValueError):
            pass  # the parent is gone: the run is ending

    @pytest.hookimpl
    def pytest_runtest_logstart(self, nodeid, location):
        self.send("start", nodeid=nodeid)

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report):
        data = self.config.hook.pytest_report_to_serializable(config=self.config, report=report)
        self.send("report", report=data)

    @pytest.hookimpl
    def pytest_runtest_logfinish(self, nodeid, location):
        self.send("finish", nodeid=nodeid)

    @pytest.hookimpl
    def pytest_warning_recorded(self, warning_message, when, nodeid, location):
        if when != "runtest":
            return
        self.send(
            "warning",
            nodeid=nodeid,
            message=str(warning_message.message),
            category=warning_message.category.__name__,
            module=warning_message.category.__module__,
            filename=warning_message.filename,
            lineno=warning_message.lineno,
        )

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session):
        self.send("done")
        try:
            self.out.close()
        except OSError:
            pass


def _replay(session, workers, by_id):
    config = session.config
    live = {w["fd"]: w for w in workers}
    stopped = False
    try:
        while live:
            ready, _, _ = select.select(list(live), [], [])
            for fd in ready:
                w = live[fd]
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    del live[fd]
                    os.close(fd)
                    _ended(session, w, by_id)
                    continue
                w["buf"] += chunk
                *lines, w["buf"] = w["buf"].split(b"\n")
                for line in lines:
                    if line:
                        _event(config, w, json.loads(line), by_id)
            if not stopped and (session.shouldfail or session.shouldstop):
                stopped = True
                for w in workers:
                    try:
                        os.write(w["stop"], b"x")
                    except OSError:
                        pass
    except BaseException:
        for w in workers:
            try:
                os.kill(w["pid"], signal.SIGINT)
            except OSError:
                pass
        raise
    finally:
        for w in workers:
            if "status" not in w and not w.get("done"):
                _reap(w, block=True)
            try:
                os.close(w["stop"])
            except OSError:
                pass


def _event(config, w, ev, by_id):
    kind = ev.get("event")
    if kind == "start":
        w["running"] = ev["nodeid"]
        item = by_id.get(ev["nodeid"])
        config.hook.pytest_runtest_logstart(nodeid=ev["nodeid"], location=item.location if item else None)
    elif kind == "report":
        report = config.hook.pytest_report_from_serializable(config=config, data=ev["report"])
        config.hook.pytest_runtest_logreport(report=report)
    elif kind == "finish":
        w["running"] = None
        w["left"] -= 1
        item = by_id.get(ev["nodeid"])
        config.hook.pytest_runtest_logfinish(nodeid=ev["nodeid"], location=item.location if item else None)
    elif kind == "warning":
        category = _category(ev.get("module"), ev.get("category"))
        message = warnings.WarningMessage(
            category(ev.get("message", "")), category, ev.get("filename", ""), ev.get("lineno", 0)
        )
        config.hook.pytest_warning_recorded.call_historic(
            kwargs=dict(warning_message=message, when="runtest", nodeid=ev.get("nodeid", ""), location=None)
        )
    elif kind == "done":
        w["done"] = True


def _category(module, name):
    try:
        cls = getattr(sys.modules[module], name)
        if isinstance(cls, type) and issubclass(cls, Warning):
            return cls
    except (KeyError, AttributeError, TypeError):
        pass
    return UserWarning


def _reap(w, block):
    try:
        pid, status = os.waitpid(w["pid"], 0 if block else os.WNOHANG)
    except ChildProcessError:
        pid, status = w["pid"], 0
    if pid:
        w["status"] = status


def _ended(session, w, by_id):
    """A worker closed its pipe: when it did so inside a test (a crash),
    that test fails and the worker's other tests are said not to run."""
    if w.get("done"):
        # Its exit (the interpreter's, and Valgrind's final leak check)
        # goes on beside the parent's; leakgate reaps what is left.
        _reap(w, block=False)
        return
    _reap(w, block=True)
    status = w["status"]
    how = (
        f"signal {signal.Signals(os.WTERMSIG(status)).name}"
        if os.WIFSIGNALED(status)
        else f"exit status {os.WEXITSTATUS(status)}"
    )
    config = session.config
    nodeid = w["running"]
    if nodeid is not None:
        from _pytest.reports import TestReport

        item = by_id.get(nodeid)
        location = item.location if item else (nodeid, None, nodeid)
        report = TestReport(
            nodeid,
            location,
            {},
            "failed",
            f"leakgate: worker {w['k'] + 1} (pid {w['pid']}) ended ({how}) while running this test",
            "call",
        )
        config.hook.pytest_runtest_logreport(report=report)
        config.hook.pytest_runtest_logfinish(nodeid=nodeid, location=location)
        w["left"] -= 1
    if w["left"] > 0 or nodeid is not None:
        tr = config.pluginmanager.get_plugin("terminalreporter")
        text = (
            f"leakgate: worker {w['k'] + 1} (pid {w['pid']}) ended ({how})"
            + (f" in {nodeid}" if nodeid else "")
            + f"; {w['left']} of its tests did not run"
        )
        if tr is not None:
            tr.write_line(text, red=True)
        else:
            sys.stderr.write(text + "\n")
        if nodeid is None and not session.shouldfail:
            session.shouldstop = session.shouldstop or text
