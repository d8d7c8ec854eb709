"""ujson: a default= function returning a non-ASCII string.

ujson 5.12.0 keeps the default function's result in the type context's
newObj, then PyUnicodeToUTF8 (src/ujson/python/objToJSON.c) stores the
string's UTF-8 encoding in the same slot, dropping the reference to the
result (upstream fix: 5.12.1, "Fix encoding ref leak with non-English
character", #714 / issue #631). Correct with 5.12.1.
"""
import ujson

for n in range(3):
    # a new string at every call (a constant one would stay alive anyway)
    out = ujson.dumps({"x": object()}, default=lambda o: "\u751f\u65e5 " + str(n) * 40)
    assert out.startswith('{"x":"\\u751f\\u65e5 '), out
print("ok")
