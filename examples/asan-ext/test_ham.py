"""test_ham.py - pytest tests of the example extension `ham`."""
import ham


def test_checksum():
    assert ham.checksum(b"abc") == 294


def test_label():
    assert ham.label(3) == "item-3"
