"""multidict: calling __init__ again on a live MultiDict.

multidict 6.7.1 overwrites the hash table of a MultiDict initialised a
second time without freeing it (upstream fix: 6.8.0, "Fixed a memory leak
when MultiDict and CIMultiDict instances are initialized more than once",
#1412). Correct with 6.8.0.
"""
from multidict import MultiDict

md = MultiDict([("key%d" % i, i) for i in range(20)])
assert len(md) == 20
md.__init__([("a", 1)])
assert list(md.items()) == [("a", 1)], list(md.items())
print("ok", len(md))
