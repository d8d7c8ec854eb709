"""hiredis: parsing RESP3 map replies.

hiredis 3.1.0's tryParentize (src/reader.c) keeps its own reference to
every key and value it puts into a map reply's dict, and to the tuple
dict.popitem() returns (upstream fix: 3.1.1, "Backport fixes from main",
#209, from "Fix memory leak in RESP3 map parsing", #204 / issue #175).
Correct with 3.1.1.
"""
import hiredis

for _ in range(3):
    reader = hiredis.Reader()
    reader.feed(b"%2\r\n+first-key\r\n:100000\r\n+second-key\r\n:200000\r\n")
    reply = reader.gets()
    assert reply == {b"first-key": 100000, b"second-key": 200000}, reply
print("ok")
