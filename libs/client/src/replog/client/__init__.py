"""replog's Python client library: producer, consumer and admin helpers."""
