"""docs/kafka-compatibility.md's table of APIs and versions is the listener's (broker/kafka/apis.py), and
each API's rule is the gRPC method's the listener applies (broker/kafka/access.py)."""

from __future__ import annotations

import re
from pathlib import Path

from replog.broker.kafka import apis
from replog.broker.kafka.access import METHOD_OF

PAGE = Path(__file__).resolve().parents[4] / "docs" / "kafka-compatibility.md"
ROW = re.compile(r"^\| (\w+) \| (\d+) \| (\d+)(?:-(\d+))? \| (.*) \|$")


def test_the_page_lists_every_api_with_its_versions_and_rule():
    rows = {}
    for line in PAGE.read_text().splitlines():
        found = ROW.match(line)
        if found:
            name, key, low, high, rule = found.groups()
            rows[name] = (int(key), int(low), int(high or low), rule)
    assert rows == {api.name: (api.key, api.min_version, api.max_version, rows.get(api.name, (0, 0, 0, ""))[3])
                    for api in apis.ALL}
    for name, (_, _, _, rule) in rows.items():
        method = METHOD_OF.get(name)
        if method is not None and not rule.startswith("refused"):
            assert rule.startswith(method.lstrip("/").replace("replog.v1.", "").replace("/", ".")), name
