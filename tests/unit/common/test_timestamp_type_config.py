"""The topic config `message.timestamp.type`: Kafka's two values, anything else refused by name."""

from __future__ import annotations

import pytest

from replog.common.core.errors import InvalidConfigError
from replog.common.core.topic_config import MESSAGE_TIMESTAMP_TYPE, TopicConfig


def test_create_time_is_the_default_and_log_append_time_is_taken():
    assert TopicConfig.from_map({}).to_map()[MESSAGE_TIMESTAMP_TYPE] == "CreateTime"
    assert TopicConfig.from_map({MESSAGE_TIMESTAMP_TYPE: "LogAppendTime"}).message_timestamp_type == "LogAppendTime"


def test_another_value_is_refused_with_the_values_allowed():
    with pytest.raises(InvalidConfigError, match="Invalid value 'logappendtime' for topic config "
                                                 "'message.timestamp.type': expected one of CreateTime, LogAppendTime"):
        TopicConfig.from_map({MESSAGE_TIMESTAMP_TYPE: "logappendtime"})
