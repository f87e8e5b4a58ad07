"""`replog consume --group` and `replog groups` against real processes (issue 43): consume commits what
it printed, describe shows lag equal to log end minus committed offset, reset-offsets --to-datetime
only plans without --execute (nothing moves), moves a stopped group's offsets with it, but refuses on
an active group, and delete removes the group."""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone

import pytest

from replog.client import GroupConsumer

from .gateway_helpers import cli_runner
from .retention_helpers import produce

pytestmark = pytest.mark.integration

TOPIC = "clicks"
GROUP = "reporting"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    from tests.conftest import ClusterFactory

    factory = ClusterFactory(tmp_path_factory.mktemp("cli-groups"))
    yield factory()
    factory.teardown()


@pytest.fixture
def replog(cluster, capsys):
    return cli_runner(cluster, capsys)


def describe(replog) -> dict:
    code, out, err = replog("groups", "describe", "--group", GROUP, "-o", "json")
    assert code == 0, err
    return json.loads(out)


def test_consume_with_a_group_then_describe_reset_and_delete(cluster, replog):
    for topic, partitions in (("__consumer_offsets", "3"), (TOPIC, "1")):
        code, _, err = replog("topics", "create", topic, "--partitions", partitions, "--replication-factor", "3")
        assert code == 0, err
    old_ms = int(time.time() * 1000) - 3_600_000
    new_ms = old_ms + 1_800_000
    produce(cluster, TOPIC, [f"old-{i}".encode() for i in range(15)], timestamp_ms=old_ms)
    produce(cluster, TOPIC, [f"new-{i}".encode() for i in range(15)], timestamp_ms=new_ms)

    code, out, err = replog("consume", "--topic", TOPIC, "--group", GROUP, "--from-beginning", "--max-records", "12")
    assert code == 0, err
    assert out.split() == [f"old-{i}" for i in range(12)]
    found = describe(replog)
    assert found["state"] == "EMPTY" and found["partitions"] == [{
        "topic": TOPIC, "partition": 0, "committed_offset": 12, "log_end_offset": 30, "lag": 18,
        "member_id": None, "client_id": None}]
    code, out, err = replog("groups", "list", "-o", "json")
    assert code == 0 and GROUP in [g["group"] for g in json.loads(out)], err

    when = datetime.fromtimestamp(new_ms / 1000, timezone.utc).isoformat()
    for plan_only in ((), ("--dry-run",)):  # without --execute it plans, and changes nothing
        code, out, err = replog("groups", "reset-offsets", "--group", GROUP, "--topic", TOPIC, "--to-datetime", when,
                                *plan_only, "-o", "json")
        assert code == 0, err
        planned = json.loads(out)
        assert planned["partitions"][0]["new_offset"] == 15 and not planned["executed"]
        assert describe(replog)["partitions"][0]["committed_offset"] == 12
    code, out, err = replog("groups", "reset-offsets", "--group", GROUP, "--topic", TOPIC, "--to-datetime", when)
    assert code == 0 and "--execute applies it" in out, err
    code, out, err = replog("groups", "reset-offsets", "--group", GROUP, "--topic", TOPIC, "--to-datetime", when,
                            "--execute")
    assert code == 0, err
    assert describe(replog)["partitions"][0]["committed_offset"] == 15

    member = GroupConsumer([p.address for p in cluster.of_role("broker")], TOPIC, group_id=GROUP,
                           enable_auto_commit=False, session_timeout_ms=6000, heartbeat_interval_ms=1000)
    try:
        deadline = time.monotonic() + 60
        while not member.assignment() and time.monotonic() < deadline:
            member.poll(200)
        assert member.assignment(), "the member never got its partition"
        code, _, err = replog("groups", "reset-offsets", "--group", GROUP, "--topic", TOPIC, "--to-earliest",
                              "--execute")
        assert code == 1 and "active member" in err
        assert describe(replog)["partitions"][0]["member_id"] is not None
    finally:
        member.close()
    assert describe(replog)["partitions"][0]["committed_offset"] == 15  # the refused reset changed nothing

    code, out, err = replog("consume", "--topic", TOPIC, "--group", GROUP, "--max-records", "1", "--print-offset")
    assert code == 0 and out.split() == ["0:15", "new-0"], (out, err)  # resumed at the reset offset
    code, _, err = replog("groups", "delete", "--group", GROUP)
    assert code == 0, err
    code, _, err = replog("groups", "describe", "--group", GROUP)
    assert code == 1 and "GROUP_ID_NOT_FOUND" in err
