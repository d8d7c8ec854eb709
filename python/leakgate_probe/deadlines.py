"""Deadlines of suites that assume native speed, relaxed under leakgate.

Under Valgrind a test runs 20-50 times slower than natively, and each
test's checkpoint adds a leak check; under a sanitizer engine allocations
and checkpoints cost too. Tests with deadlines then fail only under the
tool. When leakgate sets ``LEAKGATE_TIMEOUT_FACTOR=F`` (F > 1) the pytest
plugin calls :func:`relax` once the session is collected (every
``conftest.py`` loaded, ``--hypothesis-profile`` applied):

- hypothesis: a settings profile ``leakgate`` derived from the one loaded
  (``settings(settings.default, deadline=None)``, with the ``too_slow``
  health check suppressed: data generation is timed too), registered and
  loaded; tests whose own ``@settings`` sets a deadline (or a state
  machine's ``TestCase.settings``) get the same settings without it;
- pytest-timeout: every test's timeout (``--timeout``, ``timeout`` in the
  ini file, ``PYTEST_TIMEOUT``, ``@pytest.mark.timeout``) and the session
  timeout multiplied by F.

``LEAKGATE_KEEP_DEADLINES=1`` keeps them as the suite sets them. Returns
what was done, one line each, for pytest's report after collection.
"""

import os
import sys


def factor():
    """``LEAKGATE_TIMEOUT_FACTOR`` as a number, or None (nothing to do:
    native speed, unset, ``LEAKGATE_KEEP_DEADLINES=1``)."""
    if os.environ.get("LEAKGATE_KEEP_DEADLINES", "") not in ("", "0"):
        return None
    try:
        f = float(os.environ.get("LEAKGATE_TIMEOUT_FACTOR", ""))
    except ValueError:
        return None
    return f if f > 1 else None


def relax(config, items):
    """Relaxes what the session's tests would time; the lines saying so."""
    f = factor()
    if f is None:
        return []
    done = []
    for step in (_hypothesis, _pytest_timeout):
        try:
            line = step(config, items, f)
        except Exception as e:  # a version whose internals differ: left as it is
            line = f"leakgate: could not relax {step.__name__.strip('_')} ({type(e).__name__}: {e})"
        if line:
            done.append(line)
    return done


def _hypothesis(config, items, f):
    if "hypothesis" not in sys.modules:
        # Not imported by the suite's collection: no test uses it.
        return None
    from hypothesis import HealthCheck, settings

    def relaxed(s):
        checks = tuple(s.suppress_health_check)
        if HealthCheck.too_slow not in checks:
            checks += (HealthCheck.too_slow,)
        return settings(s, deadline=None, suppress_health_check=checks)

    profile = None
    current = settings.default
    if current.deadline is not None or HealthCheck.too_slow not in current.suppress_health_check:
        try:
            profile = settings.get_current_profile_name()
        except Exception:
            profile = "?"
        settings.register_profile("leakgate", relaxed(current))
        settings.load_profile("leakgate")
    # @given keeps the settings in force when the test module was imported
    # (the profile then, or the test's own @settings): each test's too.
    tests = own_set = 0
    for item in items:
        obj = getattr(item, "obj", None)
        fn = getattr(obj, "__func__", obj)
        own = getattr(fn, "_hypothesis_internal_use_settings", None)
        if getattr(fn, "is_hypothesis_test", False) and isinstance(own, settings) and own.deadline is not None:
            fn._hypothesis_internal_use_settings = relaxed(own)
            tests += 1
            own_set += bool(getattr(fn, "_hypothesis_internal_settings_applied", False))
        cls = getattr(item, "cls", None)
        own = getattr(cls, "settings", None) if cls is not None else None
        if isinstance(own, settings) and own.deadline is not None:  # a state machine's TestCase
            cls.settings = relaxed(own)
            tests += 1
            own_set += 1
    if profile is None and not tests:
        return None
    what = []
    if profile is not None:
        what.append(f"profile 'leakgate' = {profile!r} with deadline=None")
    if tests:
        what.append(f"{tests} test{'s' if tests != 1 else ''} ({own_set} with their own @settings)")
    return (
        "leakgate: hypothesis runs without deadlines (" + "; ".join(what) + "; too_slow health check suppressed): "
        "tests run far slower under the tool; LEAKGATE_KEEP_DEADLINES=1 keeps them"
    )


def _pytest_timeout(config, items, f):
    mod = sys.modules.get("pytest_timeout")
    if mod is None or not config.pluginmanager.has_plugin("timeout"):
        return None
    get = getattr(mod, "_get_item_settings", None)
    if get is None or getattr(get, "_leakgate", False):
        return None

    def scaled(item, marker=None):
        s = get(item, marker)
        if s.timeout:
            s = s._replace(timeout=s.timeout * f)
        return s

    scaled._leakgate = True
    mod._get_item_settings = scaled
    session = ""
    tkey, ekey = getattr(mod, "SESSION_TIMEOUT_KEY", None), getattr(mod, "SESSION_EXPIRE_KEY", None)
    if tkey is not None and ekey is not None:
        timeout = config.stash.get(tkey, 0)
        expire = config.stash.get(ekey, 0)
        if timeout and expire:
            config.stash[tkey] = timeout * f
            config.stash[ekey] = expire + timeout * (f - 1)
            session = f", the session timeout {timeout:g}s → {timeout * f:g}s"
    base = getattr(config, "_env_timeout", None)
    given = f" ({base:g}s → {base * f:g}s)" if base else ""
    return (
        f"leakgate: pytest-timeout's timeouts ×{f:g}{given}{session}: "
        "tests run far slower under the tool; LEAKGATE_KEEP_DEADLINES=1 keeps them"
    )
