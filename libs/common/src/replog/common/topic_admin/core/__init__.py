"""The pure core of topic administration: the snapshot a decision is taken on (``model``), Kafka's topic
name rules (``names``), partition health (``health``), refusals as values (``refusal``) and the topic
decisions themselves (``topics``). No I/O (tests/unit/test_core_purity.py)."""
