"""docs/record-format.md is the record format's written spec for other languages: its test vectors are
what replog.common.records writes and reads, and the CRC it describes is the one the batches carry."""

from __future__ import annotations

import re
from pathlib import Path

from crc32c import crc32c

from replog.common import records as rec

DOC = Path(__file__).resolve().parents[3] / "docs" / "record-format.md"
T = 1_700_000_000_000
B_RECORDS = [(b"k1", b"v1", T, [("trace", b"abc")]), (None, b"v2", T + 5, [("n", None)])]


def vectors() -> dict[str, bytes]:
    """Each vector's bytes, by its letter, as the page prints them."""
    text = DOC.read_text()
    found = {}
    for letter, block in re.findall(r"\*\*([A-D])\.\*\*.*?```\n(.*?)```", text, flags=re.S):
        found[letter] = bytes.fromhex("".join(block.split()))
    assert sorted(found) == ["A", "B", "C", "D"], sorted(found)
    return found


def decoded(batch: bytes) -> list[tuple]:
    return [(r.offset, r.key, r.value, r.timestamp_ms, list(r.headers)) for r in rec.decode_records(batch)]


def test_the_writer_produces_vectors_a_b_and_c_byte_for_byte():
    found = vectors()
    assert found["A"] == rec.encode_batch([(None, b"hello", T)])
    assert found["B"] == rec.encode_batch(B_RECORDS, producer_id=42, producer_epoch=0, base_sequence=7)
    assert found["C"] == rec.with_offset_and_epoch(found["A"], 100, 3)


def test_every_vector_reads_as_the_page_says():
    found = vectors()
    assert decoded(found["A"]) == [(0, None, b"hello", T, [])]
    b_records = [(0, b"k1", b"v1", T, [("trace", b"abc")]), (1, None, b"v2", T + 5, [("n", None)])]
    assert decoded(found["B"]) == b_records == decoded(found["D"])
    assert decoded(found["C"]) == [(100, None, b"hello", T, [])]
    header = rec.validate_batch(found["D"])
    assert header.attributes == 0x11 and (header.producer_id, header.base_sequence) == (42, 7)
    assert rec.read_header(found["C"]).partition_leader_epoch == 3


def test_the_crc_is_the_one_the_page_describes():
    assert crc32c(b"123456789") == 0xE3069283
    for batch in vectors().values():
        assert int.from_bytes(batch[17:21], "big") == crc32c(batch[21:])
