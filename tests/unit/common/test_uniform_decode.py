"""decode_records' one-struct path for batches of one-size records gives what the per-record path gives."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from replog.common import records as rec
from replog.common.records import reading


def per_record(batch: bytes, start_offset: int) -> list:
    out: list = []
    for pos, header in rec.iter_batches(batch):
        reading._decode_batch_records(batch, pos, header, start_offset, out, rec.DecodedRecord, ())
    return out


@given(key_len=st.integers(-1, 8), value_len=st.integers(0, 40), count=st.integers(1, 50),
       start=st.integers(0, 60), base_offset=st.integers(0, 1000))
def test_uniform_batches_decode_as_the_per_record_path_does(key_len, value_len, count, start, base_offset):
    key = None if key_len < 0 else b"k" * key_len
    records = [(key, bytes([i % 256]) * value_len, 1_000 + 7 * i) for i in range(count)]
    batch = rec.encode_batch(records, base_offset=base_offset)
    expected = per_record(batch, base_offset + start)
    assert rec.decode_records(batch, base_offset + start) == expected
    assert len(expected) == max(0, count - start)


@pytest.mark.parametrize("values", [[b"a", b"bb"], [b"ab", b"cd", b"e"], [b"", b"x"]])
def test_mixed_sizes_fall_back_to_the_per_record_path(values):
    batch = rec.encode_batch([(None, v, 5) for v in values])
    assert [r.value for r in rec.decode_records(batch)] == values


def test_a_record_type_and_prefix_shape_the_records():
    from replog.client import ConsumerRecord

    batch = rec.encode_batch([(b"k", b"v1", 9), (b"k", b"v2", 10)], base_offset=4)
    got = rec.decode_records(batch, 5, record_type=ConsumerRecord, prefix=("t", 3))
    assert got == [ConsumerRecord("t", 3, 5, b"k", b"v2", 10)]
