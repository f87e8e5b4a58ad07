"""What a send's future comes to: `RecordMetadata` when the record is written, else `ProduceError`."""

from __future__ import annotations

from dataclasses import dataclass

from replog.v1 import common_pb2


class ProduceError(Exception):
    def __init__(self, code: int, message: str) -> None:
        name = common_pb2.ErrorCode.Name(code).removeprefix("ERROR_CODE_") if code in common_pb2.ErrorCode.values() \
            else str(code)
        super().__init__(f"{name}: {message}" if message else name)
        self.code = code


@dataclass(frozen=True)
class RecordMetadata:
    topic: str
    partition: int
    offset: int
