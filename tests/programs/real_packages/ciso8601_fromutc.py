"""ciso8601: convert with the tzinfo it returns, as datetime.astimezone does.

ciso8601 2.3.2 leaks the timedelta FixedOffset_utcoffset makes on every
FixedOffset.fromutc call (upstream fix: 2.3.3, "Fixed memory leak in
FixedOffset_fromutc (#172)"). Correct with 2.3.3.
"""
import ciso8601

dt = ciso8601.parse_datetime("2014-02-03T10:35:27+05:30")
tz = dt.tzinfo
assert type(tz).__module__ != "datetime", type(tz)  # ciso8601's FixedOffset
for _ in range(3):
    local = tz.fromutc(dt)
    assert local.utcoffset() == dt.utcoffset()
print("ok", local.isoformat())
