#!/usr/bin/env python3
"""bench/gen_rules.py - write N plausible Memcheck suppressions drawn from a report.

Reads the first MB megabytes of a Valgrind XML report (made with
--gen-suppressions=all), collects the generated <suppression> blocks, and
writes N rules built from them: the real kind, the first 2-4 mangled frames,
about a third starting with '...', a third with a glob in the last name, and
half with a last frame renamed so they never match. Deterministic (seeded).
Usage: gen_rules.py REPORT.xml N [MB] > rules.supp
"""
import random
import re
import sys

path, n = sys.argv[1], int(sys.argv[2])
mb = int(sys.argv[3]) if len(sys.argv) > 3 else 200
with open(path, "rb") as f:
    data = f.read(mb * 1024 * 1024).decode("utf-8", "replace")
blocks = re.findall(r"<skind>(.*?)</skind>\s*(?:<skaux>(.*?)</skaux>)?(.*?)<rawtext>", data, re.S)
supps = []
for kind, aux, body in blocks:
    frames = re.findall(r"<sframe> <(fun|obj)>(.*?)</(?:fun|obj)> </sframe>", body)
    if len(frames) >= 2:
        supps.append((kind, aux, frames))
rng = random.Random(42)
out = []
for i in range(n):
    kind, aux, frames = rng.choice(supps)
    k = rng.randint(2, min(4, len(frames)))
    lines = [f"{t}:{v}" for t, v in frames[:k]]
    r = rng.random()
    if r < 0.33:
        lines = ["..."] + lines[1:]
    elif r < 0.66:
        lines[-1] = lines[-1][: max(5, len(lines[-1]) // 2)] + "*"
    if rng.random() < 0.5:
        lines[-1] = lines[-1] + "_nomatch_" + str(i)
    extra = [aux.replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")] if aux else []
    body = "\n".join("   " + l for l in [f"bench-{i}", kind] + extra + lines)
    out.append("# generated for the matching benchmark\n{\n" + body + "\n}\n")
sys.stdout.write("".join(out))
