"""The bulk reader's MultiRead encoding and decoding, without a server (tests/integration/test_zk_bulk.py
runs it against a real one)."""

from __future__ import annotations

import struct

import pytest

from replog.common.zk import bulk

HEADER = struct.Struct(">i?i")


def _string(value: str) -> bytes:
    return struct.pack(">i", len(value)) + value.encode()


def _reply(*results: bytes, err: int = 0) -> bytes:
    return struct.pack(">iqi", 4, 99, err) + b"".join(results) + HEADER.pack(-1, True, -1)


def _stat(version: int, czxid: int = 7, mzxid: int = 8, owner: int = 0, children: int = 0) -> bytes:
    return struct.pack(">qqqqiiiqiiq", czxid, mzxid, 1, 2, version, 0, 0, owner, 3, children, 9)


def test_a_multi_read_frames_each_read_behind_its_header_without_a_watch_and_ends_with_done():
    frame = bulk.encode_multi_read(4, bulk.OP_GET_DATA, ["/a", "/bc"], chroot="/r")
    length, xid, opcode = struct.unpack_from(">iii", frame)
    assert (length, xid, opcode) == (len(frame) - 4, 4, bulk.OP_MULTI_READ)
    assert frame[12:] == (HEADER.pack(4, False, -1) + _string("/r/a") + b"\0"
                          + HEADER.pack(4, False, -1) + _string("/r/bc") + b"\0"
                          + HEADER.pack(-1, True, -1))


def test_data_results_decode_in_order_and_a_missing_znode_is_none_among_them():
    frame = _reply(HEADER.pack(4, False, 0) + _string("one") + _stat(5, owner=11),
                   HEADER.pack(-1, False, bulk.ERR_NO_NODE) + struct.pack(">i", bulk.ERR_NO_NODE),
                   HEADER.pack(4, False, 0) + struct.pack(">i", -1) + _stat(0))
    got = bulk.decode_multi_read(frame, bulk.OP_GET_DATA, ["/a", "/missing", "/empty"])
    assert got == [(b"one", bulk.ZnodeStat(7, 8, 5, 11, 0)), None, (b"", bulk.ZnodeStat(7, 8, 0, 0, 0))]


def test_children_results_decode_to_names():
    names = struct.pack(">i", 2) + _string("x") + _string("yz")
    frame = _reply(HEADER.pack(8, False, 0) + names, HEADER.pack(8, False, 0) + struct.pack(">i", 0))
    assert bulk.decode_multi_read(frame, bulk.OP_GET_CHILDREN, ["/p", "/q"]) == [["x", "yz"], []]


def test_a_read_failing_other_than_missing_names_its_path():
    frame = _reply(HEADER.pack(4, False, 0) + _string("") + _stat(1),
                   HEADER.pack(-1, False, -113) + struct.pack(">i", -113))  # InvalidACL
    with pytest.raises(bulk.BulkReadError, match=r"error -113 reading /secret"):
        bulk.decode_multi_read(frame, bulk.OP_GET_DATA, ["/a", "/secret"])


def test_a_read_refused_for_want_of_permission_says_so_and_what_to_check():
    frame = _reply(HEADER.pack(-1, False, -102) + struct.pack(">i", -102))  # NoAuth
    with pytest.raises(bulk.ZkAuthError, match=r"refused a read of /secret: not authorized.*anonymous.*"
                                               r"zookeeper_credentials_file"):
        bulk.decode_multi_read(frame, bulk.OP_GET_DATA, ["/secret"])


def test_a_refused_multi_read_says_which_server_version_it_needs():
    with pytest.raises(bulk.BulkReadError, match="3.6 or newer"):
        bulk.decode_multi_read(struct.pack(">iqi", 4, 0, -6), bulk.OP_GET_DATA, ["/a"])


def test_a_reply_with_fewer_results_than_reads_is_refused():
    frame = _reply(HEADER.pack(8, False, 0) + struct.pack(">i", 0))
    with pytest.raises(bulk.BulkReadError, match="2 reads answered 1"):
        bulk.decode_multi_read(frame, bulk.OP_GET_CHILDREN, ["/p", "/q"])
