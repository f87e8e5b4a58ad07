"""The bulk reader (MultiReads, pipelined) agrees with kazoo on a real ZooKeeper server."""

from __future__ import annotations

import pytest

from replog.common.zk import bulk

pytestmark = pytest.mark.integration


def test_bulk_reads_match_kazoo_including_missing_znodes_and_children(zk_client):
    kazoo = zk_client.kazoo
    kazoo.ensure_path("/bulk")
    for start in range(0, 3000, 500):
        tx = kazoo.transaction()
        for i in range(start, start + 500):
            tx.create(f"/bulk/n{i}", f"value-{i}".encode() * (i % 7))
        tx.commit()
    kazoo.set("/bulk/n42", b"changed")
    # Several MultiReads per session, with missing znodes inside one and at the very end.
    paths = [f"/bulk/n{i}" for i in range(3000)]
    paths[1234:1234] = ["/bulk/missing-1"]
    paths.append("/bulk/missing-2")
    connect = zk_client.endpoint
    got = bulk.get_many(connect, paths)
    assert len(got) == len(paths)
    for path, item in zip(paths, got):
        if "missing" in path:
            assert item is None
            continue
        data, stat = kazoo.get(path)
        assert item[0] == data
        assert (item[1].version, item[1].czxid, item[1].mzxid) == (stat.version, stat.czxid, stat.mzxid)
    children = bulk.children_many(connect, ["/bulk", "/nope"])
    assert sorted(children[0]) == sorted(f"n{i}" for i in range(3000))
    assert children[1] is None
