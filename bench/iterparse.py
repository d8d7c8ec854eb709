#!/usr/bin/env python3
"""bench/iterparse.py - the Python baseline: stream a Valgrind XML report with
xml.etree.ElementTree.iterparse, count records per kind and sum leaked bytes,
clearing elements as it goes (the usual hand-rolled approach)."""
import collections
import sys
import xml.etree.ElementTree as ET

kinds = collections.Counter()
leaked = 0
for path in sys.argv[1:]:
    depth = 0
    for event, el in ET.iterparse(path, events=("start", "end")):
        if event == "start":
            depth += 1
            continue
        depth -= 1
        if el.tag == "error" and depth == 1:
            kinds[el.findtext("kind")] += 1
            leaked += int(el.findtext("xwhat/leakedbytes") or 0)
            el.clear()
        elif depth == 1:
            el.clear()
print(sum(kinds.values()), "records", leaked, "bytes", dict(kinds))
