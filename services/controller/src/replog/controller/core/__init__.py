"""The controller's pure decision core: no I/O, no clock, no global randomness.

Read in this order: ``model`` (the state), ``events`` (what happens),
``decide`` (what to do about it) and ``plan`` (what that is), ``apply`` (the
next state).  ``election`` and ``placement`` are Kafka's algorithms as pure
functions; ``states`` holds the partition and replica transition tables;
``builder`` and ``handlers/`` are how ``decide`` is built.

The core imports nothing that does I/O (grpc, kazoo, sockets, files, threads,
time, global random); ``tests/unit/controller/test_core_purity.py`` enforces it.
"""

from .apply import apply
from .decide import decide

__all__ = ["apply", "decide"]
