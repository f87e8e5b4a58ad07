"""The core's ErrorCode must mirror replog.v1.ErrorCode name for name, number for number."""

import re
from pathlib import Path

from replog.broker.core.errors import ErrorCode, Refusal

COMMON_PROTO = Path(__file__).resolve().parents[4] / "protos" / "replog" / "v1" / "common.proto"


def proto_error_codes() -> dict[str, int]:
    text = COMMON_PROTO.read_text()
    return {name: int(number) for name, number in re.findall(r"ERROR_CODE_([A-Z_]+)\s*=\s*(\d+);", text)}


def test_every_proto_code_is_mirrored_with_the_same_number():
    assert proto_error_codes() == {code.name: code.value for code in ErrorCode}


def test_refusal_never_carries_none():
    try:
        Refusal(ErrorCode.NONE, "fine")
    except AssertionError:
        return
    raise AssertionError("Refusal(NONE) must be rejected")
