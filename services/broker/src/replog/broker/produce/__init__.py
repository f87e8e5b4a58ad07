"""Produce on the leader: validation, appends, acks and the waits for the high watermark.

- values.py             a produce request and its answers as domain values
- produce_handler.py    Produce: request checks, validation, append, acks; unary and streamed
- delayed_produces.py   acks=all waits: the core purgatory behind one lock
- producer_ids.py       producer id blocks claimed in /latest_producer_id_block, for InitProducerId
"""
