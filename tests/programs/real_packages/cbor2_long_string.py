"""cbor2: decoding text strings longer than 65536 bytes with the C extension.

cbor2 5.8.0's decode_definite_long_string (source/decoder.c) drops the
partial result each time it joins the next chunk to it, and never frees
the scratch buffer for a UTF-8 character split between chunks (upstream
fix: 5.9.0, "Fixed two reference/memory leaks in the C extension's long
string decoder", #290). Correct with 5.9.0.
"""
import cbor2
import _cbor2  # cbor2's C extension; cbor2.loads is its loads when it was built

assert cbor2.loads is _cbor2.loads, "cbor2 was installed without its C extension"
for text in ["x" * 131072, ("a" * 65535 + "\u20ac") * 2]:
    data = cbor2.dumps(text)
    for _ in range(3):
        assert cbor2.loads(data) == text
print("ok")
