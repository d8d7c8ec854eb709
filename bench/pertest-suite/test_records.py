"""test_records.py - bench/pertest.sh's larger suite: clean tests doing Python
work with bytes, dicts and lists between calls of leakext.clean() (no
findings expected)."""
import hashlib
import json
import zlib

import pytest

import leakext

N = 2500


def _records(n, seed):
    return [
        {
            "id": i,
            "name": f"item-{seed}-{i}",
            "tags": [f"t{(i + k) % 7}" for k in range(3)],
            "payload": bytes((i * 31 + seed + k) % 256 for k in range(48)),
        }
        for i in range(n)
    ]


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_json_roundtrip(seed):
    recs = _records(N, seed)
    text = json.dumps([{**r, "payload": r["payload"].hex()} for r in recs])
    back = json.loads(text)
    assert [r["id"] for r in back] == list(range(N))
    for r, b in zip(recs, back):
        assert bytes.fromhex(b["payload"]) == r["payload"]
        leakext.clean()


@pytest.mark.parametrize("level", [1, 6, 9])
def test_compress(level):
    blob = b"".join(r["payload"] for r in _records(N, level))
    packed = zlib.compress(blob * 4, level)
    assert zlib.decompress(packed) == blob * 4
    digest = hashlib.sha256()
    for i in range(0, len(blob), 64):
        digest.update(blob[i : i + 64])
        leakext.clean()
    assert len(digest.hexdigest()) == 64


def test_group_by_tag():
    groups = {}
    for r in _records(2 * N, 7):
        for t in r["tags"]:
            groups.setdefault(t, []).append(r["id"])
    assert sorted(groups) == [f"t{k}" for k in range(7)]
    assert sum(len(v) for v in groups.values()) == 3 * 2 * N
    for _ in range(N):
        leakext.clean()


def test_sort_and_index():
    recs = _records(N, 9)
    by_name = sorted(recs, key=lambda r: r["name"], reverse=True)
    index = {r["name"]: r for r in by_name}
    assert len(index) == N
    assert all(index[r["name"]] is r for r in recs)
    for _ in range(N):
        leakext.clean()
