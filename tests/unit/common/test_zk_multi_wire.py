"""The multi writer's jute encoding and decoding, without a server (the integration test runs it
against a real one)."""

from __future__ import annotations

import struct

import pytest

from replog.common.zk import multi_writer as mw


def _string(value: str) -> bytes:
    return struct.pack(">i", len(value)) + value.encode()


def test_a_multi_request_frames_each_operation_behind_its_header_and_ends_with_done():
    frame = mw.encode_multi(7, [mw.Check("/e", 3), mw.SetData("/s", b"xy", 4), mw.Delete("/d")], chroot="/c")
    length, xid, opcode = struct.unpack_from(">iii", frame)
    assert (length, xid, opcode) == (len(frame) - 4, 7, 14)
    body = frame[12:]
    expected = (struct.pack(">i?i", 13, False, -1) + _string("/c/e") + struct.pack(">i", 3)
                + struct.pack(">i?i", 5, False, -1) + _string("/c/s") + struct.pack(">i", 2) + b"xy"
                + struct.pack(">i", 4)
                + struct.pack(">i?i", 2, False, -1) + _string("/c/d") + struct.pack(">i", -1)
                + struct.pack(">i?i", -1, True, -1))
    assert body == expected


def test_a_create_carries_the_open_acl_and_persistent_flags():
    body = mw.encode_multi(1, [mw.Create("/n", b"v")])[12:]
    head = struct.pack(">i?i", 1, False, -1) + _string("/n") + struct.pack(">i", 1) + b"v"
    acl = struct.pack(">i", 1) + struct.pack(">i", 31) + _string("world") + _string("anyone")
    assert body == head + acl + struct.pack(">i", 0) + struct.pack(">i?i", -1, True, -1)


def _reply(xid: int, *results: bytes) -> bytes:
    return struct.pack(">iqi", xid, 99, 0) + b"".join(results) + struct.pack(">i?i", -1, True, -1)


def test_a_successful_reply_gives_ok_for_every_operation():
    stat = bytes(68)
    frame = _reply(5, struct.pack(">i?i", 13, False, 0), struct.pack(">i?i", 5, False, 0) + stat,
                   struct.pack(">i?i", 1, False, 0) + _string("/n"), struct.pack(">i?i", 2, False, 0))
    assert mw.decode_multi(frame) == (5, [mw.OK, mw.OK, mw.OK, mw.OK])


def test_a_failed_reply_names_the_cause_and_marks_the_rest_rolled_back():
    error = lambda code: struct.pack(">i?i", -1, False, code) + struct.pack(">i", code)  # noqa: E731
    frame = _reply(6, error(0), error(mw.ERR_BAD_VERSION), error(mw.ERR_RUNTIME_INCONSISTENCY))
    assert mw.decode_multi(frame) == (6, [mw.OK, mw.ERR_BAD_VERSION, mw.ERR_RUNTIME_INCONSISTENCY])
    assert mw.error_name(mw.ERR_BAD_VERSION) == "BadVersionError"
    assert mw.error_name(-999) == "ZooKeeper error -999"


def test_a_refusal_without_results_raises_with_the_servers_code():
    with pytest.raises(mw.MultiWriteError, match="NoNodeError"):
        mw.decode_multi(struct.pack(">iqi", 3, 0, mw.ERR_NO_NODE))


def test_an_unknown_operation_is_refused_before_anything_is_sent():
    with pytest.raises(TypeError):
        mw.encode_multi(1, ["/not-an-operation"])  # type: ignore[list-item]
