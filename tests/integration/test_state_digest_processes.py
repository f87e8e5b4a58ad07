"""The state digest is the same in every process (a new controller and a broker compare them)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from replog.common import state_digest as sd

pytestmark = pytest.mark.integration


def test_another_process_computes_the_same_digest():
    """String hashing is randomised per process; the digest must not depend on it."""
    code = ("from replog.common import state_digest as sd;"
            "print(sd.Digest.of(sd.replica_term('orders', p, 1, p % 3, p, 1) for p in range(50)).encode().hex())")
    other = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": "12345", "PATH": ""}).stdout.strip()
    mine = sd.Digest.of(sd.replica_term("orders", p, 1, p % 3, p, 1) for p in range(50)).encode().hex()
    assert other == mine
