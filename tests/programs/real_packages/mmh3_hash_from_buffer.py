"""mmh3: hashing bytearrays with hash_from_buffer.

mmh3 4.1.0's mmh3_hash_from_buffer (src/mmh3/mmh3module.c) takes the
argument's buffer with PyArg_ParseTupleAndKeywords("s*") and never calls
PyBuffer_Release: each bytearray stays exported, with a reference nobody
releases (upstream fix: "Add funcs for non-immutables w/o copying", #75,
released in 5.0.0, whose sdist lacks hashlib.h; 5.0.1 builds). Correct
with 5.0.1.
"""
import mmh3

for n in range(3):
    mmh3.hash_from_buffer(bytearray(b"leakgate %d " % n * 20))
print("ok")
