from __future__ import annotations

import os

from replog.spark import printing, session


def test_local_cores():
    assert session.local_cores("local") == 1
    assert session.local_cores("local[3]") == 3
    assert session.local_cores("local[*]") == (os.cpu_count() or 1)
    assert session.local_cores("local[2,4]") == 2
    assert session.local_cores("spark://host:7077") is None
    assert session.local_cores("yarn") is None


def test_table_aligns_numbers_right_and_shows_null_as_dash():
    text = printing.table("T", [{"broker_id": 1, "rack": "a", "share": 0.5},
                                {"broker_id": 10, "rack": None, "share": None}])
    assert text.splitlines() == ["T", "BROKER_ID  RACK  SHARE", "        1  a       0.5", "       10  -         -"]
