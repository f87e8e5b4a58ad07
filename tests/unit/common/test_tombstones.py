"""A null value (a tombstone) through the batch format: built, validated, decoded back as None."""

import pytest

from replog.common.core.errors import InvalidConfigError
from replog.common.core.topic_config import TopicConfig
from replog.common.records import (
    COMPRESSION_GZIP,
    BatchBuilder,
    decode_records,
    encode_batch,
    validate_batch,
)


@pytest.mark.parametrize("compression", [0, COMPRESSION_GZIP])
def test_tombstones_read_back_as_none_beside_ordinary_records(compression):
    batch = encode_batch([(b"k1", b"v1", 10), (b"k1", None, 11), (None, None, 12), (b"k2", b"", 13)],
                         compression=compression)
    validate_batch(batch)
    records = decode_records(batch)
    assert [(r.key, r.value) for r in records] == [(b"k1", b"v1"), (b"k1", None), (None, None), (b"k2", b"")]


def test_a_batch_of_only_tombstones_and_one_with_headers():
    builder = BatchBuilder()
    builder.add(b"a", None, 5)
    builder.add(b"b", None, 6)
    batch = builder.build()
    validate_batch(batch)
    assert [r.value for r in decode_records(batch)] == [None, None]
    with_headers = encode_batch([(b"a", None, 1, [("h", b"x")]), (b"b", b"v", 2, None)])
    validate_batch(with_headers)
    assert [(r.value, r.headers) for r in decode_records(with_headers)] == [(None, (("h", b"x"),)), (b"v", ())]


def test_a_builder_switching_to_headers_keeps_an_earlier_tombstone():
    builder = BatchBuilder()
    builder.add(b"a", None, 5)
    builder.add_many_with_headers([(b"b", b"v", 6, [("h", None)])])
    batch = builder.build()
    validate_batch(batch)
    assert [(r.key, r.value) for r in decode_records(batch)] == [(b"a", None), (b"b", b"v")]


@pytest.mark.parametrize("text,expected", [("compact", "compact"), ("delete", "delete"),
                                           ("compact,delete", "compact,delete"), ("delete, compact", "compact,delete")])
def test_cleanup_policy_values(text, expected):
    assert TopicConfig.from_map({"cleanup.policy": text}).cleanup_policy == expected


@pytest.mark.parametrize("configs", [{"cleanup.policy": "compress"}, {"cleanup.policy": "compact,compact"},
                                     {"min.cleanable.dirty.ratio": "1.5"}, {"min.cleanable.dirty.ratio": "nan"},
                                     {"min.compaction.lag.ms": "-1"}, {"max.compaction.lag.ms": "0"},
                                     {"delete.retention.ms": "x"}])
def test_compaction_configs_out_of_range_are_refused(configs):
    with pytest.raises(InvalidConfigError):
        TopicConfig.from_map(configs)
