"""The Spark jobs' pure logic: no Spark, no I/O (STYLE.md rule 1; tests/unit/test_core_purity.py checks it)."""
