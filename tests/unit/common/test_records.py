"""The record batch format: round trips, CRC coverage, offset stamping, truncated tails."""

from __future__ import annotations

import struct

import pytest
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from replog.common.records import (
    CRC_START,
    BatchBuilder,
    HEADER_SIZE,
    CorruptRecordError,
    DecodedRecord,
    RecordTooLargeError,
    decode_records,
    encode_batch,
    encode_empty_batch,
    iter_batches,
    read_header,
    validate_batch,
    with_offset_and_epoch,
)

T0_MS = 1_700_000_000_000


def records(n: int, value_bytes: int = 20) -> list[tuple[bytes | None, bytes, int]]:
    return [(b"key-%d" % i, bytes([i % 256]) * value_bytes, T0_MS + i) for i in range(n)]


def test_round_trip_keeps_keys_values_timestamps_and_offsets():
    batch = encode_batch(records(5), base_offset=100)
    decoded = decode_records(batch)
    assert decoded == [DecodedRecord(100 + i, k, v, ts) for i, (k, v, ts) in enumerate(records(5))]


def test_header_fields():
    batch = encode_batch(
        [(None, b"a", T0_MS + 5), (None, b"b", T0_MS), (None, b"c", T0_MS + 9)],
        base_offset=7,
        leader_epoch=3,
        producer_id=42,
        producer_epoch=2,
        base_sequence=11,
    )
    header = validate_batch(batch)
    assert header == read_header(batch)
    assert (header.base_offset, header.partition_leader_epoch, header.magic) == (7, 3, 2)
    assert (header.record_count, header.last_offset_delta, header.last_offset, header.next_offset) == (3, 2, 9, 10)
    assert (header.base_timestamp_ms, header.max_timestamp_ms) == (T0_MS + 5, T0_MS + 9)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (42, 2, 11)
    assert header.size_bytes == len(batch)
    assert HEADER_SIZE == 61


def test_null_key_and_empty_key_are_different():
    batch = encode_batch([(None, b"v", T0_MS), (b"", b"v", T0_MS), (b"k", b"", T0_MS)])
    keys = [(r.key, r.value) for r in decode_records(batch)]
    assert keys == [(None, b"v"), (b"", b"v"), (b"k", b"")]


def test_empty_batch_is_refused():
    with pytest.raises(ValueError):
        encode_batch([])


@pytest.mark.parametrize("position", [CRC_START, CRC_START + 5, HEADER_SIZE, HEADER_SIZE + 30, -1])
def test_crc_detects_a_flipped_byte_anywhere_it_covers(position):
    batch = bytearray(encode_batch(records(3)))
    batch[position] ^= 0x01
    with pytest.raises(CorruptRecordError, match="CRC mismatch"):
        validate_batch(batch)


def test_offset_and_epoch_patch_keeps_the_crc_valid():
    batch = encode_batch(records(4))
    stamped = with_offset_and_epoch(batch, 1234, 9)
    header = validate_batch(stamped)
    assert (header.base_offset, header.partition_leader_epoch) == (1234, 9)
    assert header.crc == read_header(batch).crc
    assert stamped[16:] == batch[16:]
    assert [r.offset for r in decode_records(stamped)] == [1234, 1235, 1236, 1237]
    assert validate_batch(batch).stamped(1234, 9) == header  # the header the leader keeps for it


def test_bad_magic_is_reported():
    batch = bytearray(encode_batch(records(1)))
    batch[16] = 1
    with pytest.raises(CorruptRecordError, match="magic 1"):
        validate_batch(batch)


def test_length_beyond_the_buffer_is_reported():
    batch = encode_batch(records(2))
    with pytest.raises(CorruptRecordError, match="available"):
        validate_batch(batch[:-1])


def test_inconsistent_record_count_is_reported():
    batch = bytearray(encode_batch(records(2)))
    struct.pack_into(">i", batch, 23, 5)  # last_offset_delta, inside the CRC: recompute it
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[CRC_START:])))
    with pytest.raises(CorruptRecordError, match="inconsistent"):
        validate_batch(batch)


def test_records_that_do_not_fill_the_batch_are_reported():
    # A producer bug with a valid CRC: record_count says 3, the body holds 2 records.
    two = bytearray(encode_batch(records(2)))
    struct.pack_into(">i", two, 23, 2)
    struct.pack_into(">i", two, 57, 3)
    struct.pack_into(">I", two, 17, crc32c(bytes(two[CRC_START:])))
    with pytest.raises(CorruptRecordError, match="record 2 runs past"):
        validate_batch(two)
    validate_batch(two, check_records=False)  # the shallow check only sees the CRC and counts


def test_max_bytes_raises_record_too_large():
    batch = encode_batch(records(10, value_bytes=100))
    validate_batch(batch, max_bytes=len(batch))
    with pytest.raises(RecordTooLargeError, match=f"{len(batch)} bytes"):
        validate_batch(batch, max_bytes=len(batch) - 1)


def test_iter_batches_stops_at_a_truncated_tail_and_says_where():
    batches = [encode_batch(records(i + 1), base_offset=i * 10) for i in range(3)]
    joined = b"".join(batches)
    for cut in (1, HEADER_SIZE - 1, HEADER_SIZE + 1, len(batches[2]) - 1):
        scan = iter_batches(joined[: len(joined) - cut])
        positions = [position for position, _ in scan]
        assert positions == [0, len(batches[0])]
        assert scan.stop_position == len(batches[0]) + len(batches[1])
        assert scan.tail_bytes == len(batches[2]) - cut
    scan = iter_batches(joined)
    assert [h.base_offset for _, h in scan] == [0, 10, 20]
    assert scan.tail_bytes == 0


def test_iter_batches_refuses_garbage():
    with pytest.raises(CorruptRecordError):
        list(iter_batches(bytes(200)))


def test_decode_across_batches_skips_records_below_start_offset():
    joined = encode_batch(records(3), base_offset=0) + encode_batch(records(3), base_offset=3)
    assert [r.offset for r in decode_records(joined, start_offset=2)] == [2, 3, 4, 5]
    assert [r.offset for r in decode_records(joined, start_offset=4)] == [4, 5]
    assert decode_records(joined[:-5], start_offset=0)[-1].offset == 2  # truncated tail ignored


def test_decode_refuses_a_corrupt_batch():
    batch = bytearray(encode_batch(records(2)))
    batch[-1] ^= 0xFF
    with pytest.raises(CorruptRecordError):
        decode_records(batch)


record_strategy = st.tuples(
    st.one_of(st.none(), st.binary(max_size=40)),
    st.binary(max_size=200),
    st.integers(min_value=0, max_value=2**62),
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(record_strategy, min_size=1, max_size=20), min_size=1, max_size=5),
    st.integers(min_value=0, max_value=2**40),
    st.integers(min_value=-1, max_value=2**31 - 1),
)
def test_property_encode_then_decode_is_identity(batches_of_records, base_offset, leader_epoch):
    buf, offset, expected = [], base_offset, []
    for batch_records in batches_of_records:
        batch = encode_batch(batch_records, base_offset=offset, leader_epoch=leader_epoch)
        header = validate_batch(batch)
        assert header.max_timestamp_ms == max(ts for _, _, ts in batch_records)
        buf.append(batch)
        expected += [DecodedRecord(offset + i, k, v, ts) for i, (k, v, ts) in enumerate(batch_records)]
        offset += len(batch_records)
    assert decode_records(b"".join(buf)) == expected


# --- the fast path for batches of same-size records ----------------------------------------------

def recrc(batch: bytearray) -> bytearray:
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[CRC_START:])))
    return batch


def uniform(n: int = 5, key: bytes | None = b"k", value: bytes = b"v" * 10) -> bytearray:
    return bytearray(encode_batch([(key, value, T0_MS + i % 3) for i in range(n)]))


def test_uniform_batch_with_a_wrong_offset_delta_is_refused():
    batch = uniform()
    record_bytes = 16 + 1 + 4 + 10
    struct.pack_into(">i", batch, HEADER_SIZE + 3 * record_bytes, 7)  # record 3 says offset_delta 7
    with pytest.raises(CorruptRecordError, match="record 3 has offset_delta 7"):
        validate_batch(recrc(batch))


def test_uniform_batch_with_a_wrong_max_timestamp_is_refused():
    batch = uniform()
    struct.pack_into(">q", batch, 35, T0_MS + 99)  # max_timestamp_ms
    with pytest.raises(CorruptRecordError, match="max_timestamp_ms"):
        validate_batch(recrc(batch))


def test_same_size_records_mixing_null_and_empty_keys_are_valid():
    batch = encode_batch([(None if i % 2 else b"", b"value", T0_MS) for i in range(6)])
    assert validate_batch(batch).record_count == 6


@pytest.mark.parametrize("key", [None, b"", b"key"])
def test_the_fast_path_takes_valid_batches_of_one_record_size(key):
    from replog.common.records import validation as records_module

    for n in (1, 2, 255, 256, 257, 300, 1025):  # whole and partial chunks of timestamps; columns past 1024
        batch = uniform(n, key, b"v" * 100)
        assert records_module._uniform_records_are_valid(batch, 0, read_header(batch))


@pytest.mark.parametrize("latest", [0, 255, 256, 511, 512, 599])
def test_the_fast_path_finds_the_latest_timestamp_in_any_chunk_of_records(latest):
    from replog.common.records import validation as records_module

    batch = bytearray(encode_batch([(None, b"v" * 20, T0_MS + (50 if i == latest else 0)) for i in range(600)]))
    assert records_module._uniform_records_are_valid(batch, 0, read_header(batch))
    struct.pack_into(">q", batch, 35, T0_MS + 49)  # max_timestamp_ms one short of record `latest`'s
    with pytest.raises(CorruptRecordError, match="max_timestamp_ms"):
        validate_batch(recrc(batch))


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.integers(1, 12), st.integers(250, 600)), st.integers(0, 4), st.integers(0, 40), st.data())
def test_property_the_fast_path_never_accepts_what_the_full_check_refuses(n, key_bytes, value_bytes, data):
    from replog.common.records import validation as records_module

    batch = uniform(n, b"k" * key_bytes, b"v" * value_bytes)
    position = data.draw(st.integers(HEADER_SIZE, len(batch) - 1))
    batch[position] = data.draw(st.integers(0, 255))
    recrc(batch)
    fast = records_module._uniform_records_are_valid(batch, 0, read_header(batch))
    original = records_module._uniform_records_are_valid
    records_module._uniform_records_are_valid = lambda *args: False  # the per-record loop alone
    try:
        validate_batch(batch)
        full = True
    except CorruptRecordError:
        full = False
    finally:
        records_module._uniform_records_are_valid = original
    assert not fast or full


# --- BatchBuilder: records encoded as they join a batch (the producer's open batch) ------------

@settings(max_examples=50, deadline=None)
@given(n=st.integers(1, 40), cuts=st.lists(st.integers(0, 40), max_size=6), null_keys=st.booleans())
def test_property_a_batch_built_in_pieces_is_the_batch_encoded_at_once(n, cuts, null_keys):
    batch_records = [(None if null_keys else key, value, ts) for key, value, ts in records(n)]
    builder = BatchBuilder()
    start = 0
    for cut in sorted({c for c in cuts if 0 < c < n}) + [n]:
        builder.add_many(batch_records[start:cut])
        start = cut
    stamps = dict(producer_id=7, producer_epoch=2, base_sequence=40, base_offset=100, leader_epoch=3)

    assert builder.count == n
    assert builder.build(**stamps) == encode_batch(batch_records, **stamps)


def test_a_builder_goes_on_after_a_build_and_the_next_build_holds_every_record():
    builder = BatchBuilder().add_many(records(3))
    first = builder.build()
    builder.add_many(records(5)[3:])

    assert [r.value for r in decode_records(first)] == [v for _, v, _ in records(3)]
    assert decode_records(builder.build()) == decode_records(encode_batch(records(5)))


def test_a_record_earlier_than_the_first_keeps_its_own_timestamp():
    builder = BatchBuilder().add_many([(None, b"a", T0_MS)]).add_many([(None, b"b", T0_MS - 5_000)])

    decoded = decode_records(builder.build())

    assert [(r.value, r.timestamp_ms) for r in decoded] == [(b"a", T0_MS), (b"b", T0_MS - 5_000)]
    assert read_header(builder.build()).max_timestamp_ms == T0_MS


def test_an_empty_builder_builds_nothing():
    with pytest.raises(ValueError, match="at least one record"):
        BatchBuilder().build()


def test_an_empty_batch_round_trips_and_reads_as_no_record_between_others():
    """The log cleaner's empty batch (batch.py): a header only, over offsets that hold no record any more."""
    empty = encode_empty_batch(base_offset=3, last_offset_delta=4, leader_epoch=2, timestamp_ms=T0_MS,
                               producer_id=42, producer_epoch=1, base_sequence=9)
    header = validate_batch(empty)
    assert len(empty) == HEADER_SIZE
    assert (header.base_offset, header.last_offset, header.next_offset, header.record_count) == (3, 7, 8, 0)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (42, 1, 9)
    assert decode_records(empty) == []
    log = encode_batch(records(3), base_offset=0) + empty + encode_batch(records(1), base_offset=8)
    assert [r.offset for r in decode_records(log)] == [0, 1, 2, 8]
    assert [r.offset for r in decode_records(log, start_offset=4)] == [8]
    assert [(h.base_offset, h.next_offset) for _, h in iter_batches(log)] == [(0, 3), (3, 8), (8, 9)]


def test_an_empty_batch_with_record_bytes_or_attributes_is_corrupt():
    empty = encode_empty_batch(base_offset=0, last_offset_delta=0, leader_epoch=0, timestamp_ms=T0_MS,
                               producer_id=1, producer_epoch=0, base_sequence=0)
    with_bytes = bytearray(empty + b"\x00" * 4)
    struct.pack_into(">i", with_bytes, 8, len(with_bytes) - 12)
    struct.pack_into(">I", with_bytes, 17, crc32c(bytes(with_bytes[CRC_START:])))
    with pytest.raises(CorruptRecordError, match="empty batch"):
        validate_batch(bytes(with_bytes))
    compressed = bytearray(empty)
    struct.pack_into(">h", compressed, 21, 1)
    struct.pack_into(">I", compressed, 17, crc32c(bytes(compressed[CRC_START:])))
    with pytest.raises(CorruptRecordError, match="empty batch"):
        validate_batch(bytes(compressed))
