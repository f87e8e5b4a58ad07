"""Whether a write is taken, which retries are duplicates, and when a waiting acks=all write is answered.

- produce.py           produce admission, delayed produce completion
- producer_state.py    idempotent producer sequences (KIP-98)
- purgatory.py         delayed operations keyed by partition

Pure, like the rest of the core (tests/unit/test_core_purity.py).
"""
