"""The records source's options as Spark hands them over (a case-insensitive map): what each reader takes,
refuses, and how it reaches the brokers (records/reader.py)."""

from __future__ import annotations

import pytest
from pyspark.sql.datasource import CaseInsensitiveDict

from replog.spark.records.reader import SCHEMA, RecordsBatchReader, RecordsStreamReader
from replog.spark.source import ReplogDataSource

PLAINTEXT = {"bootstrap.servers": "127.0.0.1:9092", "subscribe": "orders", "insecure": "true"}


def options(**given) -> CaseInsensitiveDict:
    return CaseInsensitiveDict({**PLAINTEXT, **given})


@pytest.mark.parametrize("name, value", [("endingOffsets", "latest"), ("endingTimestamp", "1700000000000"),
                                         ("endingOffsetsByTimestamp", '{"orders": {"0": 1700000000000}}')])
def test_a_stream_refuses_an_end_rather_than_run_past_it(name, value):
    with pytest.raises(ValueError, match=f"does not take {name} here: a streaming read"):
        RecordsStreamReader(options(**{name: value}))
    assert RecordsBatchReader(options(**{name: value})).ending is not None


def test_a_batch_read_refuses_a_trigger_limit():
    with pytest.raises(ValueError, match="does not take maxOffsetsPerTrigger here: only a streaming read"):
        RecordsBatchReader(options(maxOffsetsPerTrigger="1000"))
    assert RecordsStreamReader(options(maxOffsetsPerTrigger="1000")).per_trigger == 1000


def test_every_ignored_option_is_named_whatever_its_case():
    with pytest.raises(ValueError, match="endingOffsets, endingTimestamp"):
        RecordsStreamReader(options(endingoffsets="latest", ENDINGTIMESTAMP="1"))


def test_sparks_kafka_spelling_of_the_brokers_is_taken():
    given = CaseInsensitiveDict({"kafka.bootstrap.servers": "10.0.0.1:9092,10.0.0.2:9092", "subscribe": "orders",
                                 "insecure": "true"})
    assert RecordsBatchReader(given).connection.bootstrap == "10.0.0.1:9092,10.0.0.2:9092"
    given["bootstrap.servers"] = "10.0.0.1:9092, 10.0.0.2:9092"  # the same brokers, spaced otherwise
    assert RecordsStreamReader(given).connection.bootstrap == "10.0.0.1:9092, 10.0.0.2:9092"
    assert ReplogDataSource(given).schema() == SCHEMA  # the records source, not the topology one


def test_both_spellings_naming_other_brokers_are_refused():
    with pytest.raises(ValueError, match="bootstrap.servers and kafka.bootstrap.servers with different brokers"):
        RecordsBatchReader(options(**{"kafka.bootstrap.servers": "10.0.0.9:9092"}))
