"""The Spark jobs' pure logic: no Spark, no I/O (tests/unit/test_core_purity.py checks it)."""
