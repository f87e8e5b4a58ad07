"""One local Spark session for every Spark test (a session costs 6-18 s to start on 2 cores)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def spark():
    from replog.spark import session

    spark = session.build("local[2]", "replog-spark tests", shuffle_partitions=2)
    yield spark
    spark.stop()
