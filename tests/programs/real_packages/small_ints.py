"""Correct code handing small ints (zero in particular) to the extensions.

CPython 3.11 makes ints such as int("0") and int.from_bytes(b"\0\0", ...)
through _PyLong_New and leaves parts Memcheck sees as uninitialised;
CPython's own reads of them (reference counts, dict inserts) may report
errors whose stack passes through the extension while the origin lies
wholly in the interpreter. That is CPython's behaviour, not the extension's:
the run must pass.
"""
import ciso8601
from multidict import MultiDict

# One list literal (a copy such as `zeros + [...]` would launder the values
# through CPython's own first read).
vals = [0, 5 - 5, int("0"), int.from_bytes(b"\0\0", "little"), sum([]), len(""),
        2**40 - 2**40, int(0.0), abs(-0), 7 // 8, 3 % 3,
        1, -1, int("1"), int("-5"), int.from_bytes(b"\x07", "big"), 255, 256]

dt = ciso8601.parse_datetime("2000-01-01T00:00:00+01:00")
assert (dt.hour, dt.minute, dt.second, dt.microsecond) == (0, 0, 0, 0)
FixedOffset = type(dt.tzinfo)
for v in vals:
    tz = FixedOffset(v)  # PyArg_ParseTuple "i", then a range check in C
    assert tz.utcoffset(None).total_seconds() == v
    assert FixedOffset(v * 60).utcoffset(None).total_seconds() == v * 60

md = MultiDict((str(i), v) for i, v in enumerate(vals))
md.extend([("zero", int("0")), ("zero", int.from_bytes(b"\0", "little"))])
assert md.getone("0") == 0 and md.getall("zero") == [0, 0]
assert sum(md.values()) == sum(vals)
print("ok", len(md))
