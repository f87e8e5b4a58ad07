"""The records source's options as Spark hands them over (a case-insensitive map): what each reader takes,
refuses, and how it reaches the brokers (records/reader.py)."""

from __future__ import annotations

import pytest
from pyspark.sql.datasource import CaseInsensitiveDict

from replog.common.security import local
from replog.common.security.files import TlsFiles
from replog.common.security.local import ClientTlsError
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


@pytest.mark.parametrize("given, missing", [({"tls_ca_file": "ca.pem"}, "tls_cert_file, tls_key_file"),
                                            ({"tls_ca_file": "ca.pem", "tls_cert_file": "me.pem"}, "tls_key_file")])
def test_some_tls_options_without_the_rest_name_the_options_not_the_flags(given, missing):
    tls_options = CaseInsensitiveDict({**PLAINTEXT, "insecure": "false", **given})
    with pytest.raises(ClientTlsError) as error:
        RecordsBatchReader(tls_options)
    message = str(error.value)
    assert "tls_ca_file, tls_cert_file and tls_key_file go together" in message and f"missing: {missing}" in message
    assert "--tls" not in message


def test_the_three_tls_options_are_the_files_read_with_whatever_the_environment_says(monkeypatch):
    monkeypatch.setenv(local.ENV_INSECURE, "true")
    files = {"tls_ca_file": "ca.pem", "tls_cert_file": "me.pem", "tls_key_file": "me.key"}
    connection = RecordsBatchReader(CaseInsensitiveDict({**PLAINTEXT, "insecure": "false", **files})).connection
    assert (connection.tls, connection.insecure) == (TlsFiles("ca.pem", "me.pem", "me.key"), False)


def test_insecure_is_plaintext_and_nothing_else(monkeypatch, tmp_path):
    assert (RecordsBatchReader(options(insecure="TRUE")).connection.tls,
            RecordsBatchReader(options(insecure="TRUE")).connection.insecure) == (None, True)
    with pytest.raises(ValueError, match="insecure: expected true or false, not 'yes'"):
        RecordsBatchReader(options(insecure="yes"))
    with pytest.raises(ValueError, match="insecure=true .* and tls_key_file .* contradict"):
        RecordsStreamReader(options(tls_key_file="me.key"))
    for name in (local.ENV_CA, local.ENV_CERT, local.ENV_KEY, local.ENV_INSECURE):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(local.STATE_DIR_ENV, str(tmp_path))  # no certificate anywhere: say what to pass
    with pytest.raises(ClientTlsError, match="pass tls_ca_file, tls_cert_file and tls_key_file .* or insecure for"):
        RecordsBatchReader(options(insecure="false"))
    monkeypatch.setenv(local.ENV_INSECURE, "true")  # insecure=false leaves the choice to the environment
    assert RecordsBatchReader(options(insecure="false")).connection.insecure


@pytest.mark.parametrize("name", ["failOnDataLoss", "assign", "minOffsetsPerTrigger", "subscribePattern", "table"])
def test_an_option_no_reader_takes_is_refused_by_name(name):
    """Spark's Kafka source options replog does not serve, and a topology option on a records read, are
    refused rather than silently dropped."""
    source = ReplogDataSource(options(**{name: "x"}))
    for read in (lambda: source.reader(None), lambda: source.streamReader(None)):
        with pytest.raises(ValueError, match=f"(?i)does not know {name} for a read of records"):
            read()


def test_a_topology_read_refuses_records_options():
    source = ReplogDataSource(CaseInsensitiveDict({"gateway": "127.0.0.1:9090", "maxRecordsPerPartition": "10"}))
    with pytest.raises(ValueError, match="does not know maxrecordsperpartition for a read of the topology"):
        source.reader(None)
