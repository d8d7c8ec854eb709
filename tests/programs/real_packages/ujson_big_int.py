"""ujson: decoding integers too big for 64 bits.

ujson 5.11.0's Object_newIntegerFromString (src/ujson/python/JSONtoObj.c)
copies the digits into a PyObject_Malloc buffer for PyLong_FromString and
never frees it (upstream fix: 5.12.0, "Fix memory leak parsing large
integers", commit 4baeb95). Correct with 5.12.0.
"""
import ujson

for n in range(3):
    digits = "1" * 30 + str(n)
    assert ujson.loads(digits) == int(digits)
print("ok")
