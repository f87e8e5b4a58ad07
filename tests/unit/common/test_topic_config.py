"""Topic configs: Kafka's keys in, typed values out, clear errors."""

import pytest

from replog.common.core.errors import InvalidConfigError
from replog.common.core.topic_config import TopicConfig
from replog.common.error_codes import ErrorCode


def test_defaults_when_nothing_is_set():
    config = TopicConfig.from_map({})
    assert config == TopicConfig()
    assert config.min_insync_replicas == 1
    assert config.unclean_leader_election is False


def test_values_are_parsed():
    config = TopicConfig.from_map({
        "min.insync.replicas": "2",
        "unclean.leader.election.enable": "TRUE",
        "retention.ms": "-1",
        "flush.messages": "1",
    })
    assert (config.min_insync_replicas, config.unclean_leader_election, config.retention_ms,
            config.flush_messages) == (2, True, -1, 1)


def test_round_trip_through_the_string_map():
    config = TopicConfig(min_insync_replicas=2, unclean_leader_election=True, flush_ms=500)
    assert TopicConfig.from_map(config.to_map()) == config
    assert "flush.messages" not in config.to_map()


@pytest.mark.parametrize("configs, message", [
    ({"min.insync.replica": "2"}, "Unknown topic config 'min.insync.replica'; known configs: "),
    ({"min.insync.replicas": "two"}, "Invalid value 'two' for topic config 'min.insync.replicas': expected an integer."),
    ({"min.insync.replicas": "0"}, "Invalid value 0 for topic config 'min.insync.replicas': must be between 1 and"),
    ({"unclean.leader.election.enable": "yes"},
     "Invalid value 'yes' for topic config 'unclean.leader.election.enable': expected 'true' or 'false'."),
    ({"retention.ms": "-2"}, "must be between -1 and"),
])
def test_bad_keys_and_values_are_refused_with_the_key_named(configs, message):
    with pytest.raises(InvalidConfigError) as raised:
        TopicConfig.from_map(configs)
    assert message in str(raised.value)
    assert raised.value.code is ErrorCode.INVALID_CONFIG
