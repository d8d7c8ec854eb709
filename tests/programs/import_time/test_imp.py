"""pytest: impext is imported at collection, and cache() runs there too
(before the first test); the tests only call what does not leak, except
test_error_path."""
import impext

impext.cache()


def test_fine():
    assert impext.fine() == "ok"


def test_error_path():
    try:
        impext.fail_once(1)
    except ValueError:
        pass
