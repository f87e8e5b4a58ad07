"""cpu_scheduling.choice: the policy asked for through REPLOG_CPU_SCHEDULING (what `configure`
does with it in a process: tests/integration/test_cpu_scheduling.py)."""

from __future__ import annotations

import pytest

from replog.common import cpu_scheduling
from replog.common.config import ConfigError


@pytest.mark.parametrize("value, expected", [
    ("batch", "batch"), (" Normal ", "normal"), ("realtime", "realtime"), ("", "batch")])
def test_the_choice_is_read_from_the_environment(value, expected):
    assert cpu_scheduling.choice({cpu_scheduling.ENV: value}) == expected
    assert cpu_scheduling.choice({}) == "batch"


def test_an_unknown_choice_is_a_configuration_error_naming_the_choices():
    with pytest.raises(ConfigError, match=r"REPLOG_CPU_SCHEDULING='fast': must be one of batch, normal, realtime"):
        cpu_scheduling.choice({cpu_scheduling.ENV: "fast"})
