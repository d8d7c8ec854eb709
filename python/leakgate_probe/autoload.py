"""What ``leakgate run`` loads into pytest (``PYTEST_PLUGINS``): registers
``leakgate_probe.pytest_plugin`` under the name ``leakgate`` unless it is
registered already (the ``pytest11`` entry point of an installed
leakgate_probe) or blocked with ``-p no:leakgate``."""

try:
    import pytest

    _hookimpl = pytest.hookimpl
except ImportError:  # imported without pytest: nothing will call the hooks

    def _hookimpl(**_kw):
        return lambda f: f



@_hookimpl(tryfirst=True)
def pytest_configure(config):
    from leakgate_probe import pytest_plugin

    pm = config.pluginmanager
    if pm.is_registered(pytest_plugin) or pm.has_plugin("leakgate") or pm.is_blocked("leakgate"):
        return
    pm.register(pytest_plugin, "leakgate")
