"""Kafka's wire primitives: fixed-width big-endian integers, (unsigned) varints, strings, bytes and
arrays in their classic and compact ("flexible") forms, and tagged fields. Pure: bytes in, values out.

A `Reader` walks one request's bytes and raises `WireError` for anything cut short or out of bounds;
the listener answers such a request by closing nothing but that request (see server.py). A `Writer`
appends to one bytearray. Every length read is checked against the bytes left, so a request cannot
make the broker allocate more than it sent.
"""

from __future__ import annotations

import struct

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_F64 = struct.Struct(">d")
VARINT_BYTES_MAX = 10


class WireError(ValueError):
    """The bytes are not a well-formed message of the schema read."""


class Reader:
    __slots__ = ("data", "pos", "end")

    def __init__(self, data: bytes | memoryview, pos: int = 0, end: int | None = None) -> None:
        self.data = data
        self.pos = pos
        self.end = len(data) if end is None else end

    @property
    def left(self) -> int:
        return self.end - self.pos

    def _take(self, size: int) -> int:
        at = self.pos
        if size < 0 or at + size > self.end:
            raise WireError(f"{size} bytes wanted at {at}, {self.end - at} left")
        self.pos = at + size
        return at

    def _fixed(self, shape: struct.Struct):
        return shape.unpack_from(self.data, self._take(shape.size))[0]

    def int8(self) -> int:
        return self._fixed(_I8)

    def int16(self) -> int:
        return self._fixed(_I16)

    def uint16(self) -> int:
        return self._fixed(_U16)

    def int32(self) -> int:
        return self._fixed(_I32)

    def uint32(self) -> int:
        return self._fixed(_U32)

    def int64(self) -> int:
        return self._fixed(_I64)

    def float64(self) -> float:
        return self._fixed(_F64)

    def boolean(self) -> bool:
        return self.int8() != 0

    def uvarint(self) -> int:
        value, shift = 0, 0
        for _ in range(VARINT_BYTES_MAX):
            byte = self.data[self._take(1)]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
        raise WireError("a varint longer than 10 bytes")

    def varint(self) -> int:
        raw = self.uvarint()
        return (raw >> 1) ^ -(raw & 1)

    def raw(self, size: int) -> bytes:
        at = self._take(size)
        return bytes(self.data[at:at + size])

    def _text(self, size: int) -> str:
        try:
            return self.raw(size).decode("utf-8")
        except UnicodeDecodeError:
            raise WireError("a string that is not UTF-8") from None

    def string(self, *, compact: bool, nullable: bool) -> str | None:
        size = self.uvarint() - 1 if compact else self.int16()
        if size < 0:
            if not nullable:
                raise WireError("null where a string is required")
            return None
        return self._text(size)

    def bytes_(self, *, compact: bool, nullable: bool) -> bytes | None:
        size = self.uvarint() - 1 if compact else self.int32()
        if size < 0:
            if not nullable:
                raise WireError("null where bytes are required")
            return None
        return self.raw(size)

    def array_length(self, *, compact: bool) -> int:
        """The item count of an array (-1: null); each item takes at least a byte, so a count above the
        bytes left is refused before anything is built."""
        count = self.uvarint() - 1 if compact else self.int32()
        if count > self.left:
            raise WireError(f"an array of {count} items in {self.left} bytes")
        return count

    def skip_tagged_fields(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()  # the tag
            self._take(self.uvarint())


class Writer:
    __slots__ = ("out",)

    def __init__(self) -> None:
        self.out = bytearray()

    def int8(self, value: int) -> None:
        self.out += _I8.pack(value)

    def int16(self, value: int) -> None:
        self.out += _I16.pack(value)

    def uint16(self, value: int) -> None:
        self.out += _U16.pack(value)

    def int32(self, value: int) -> None:
        self.out += _I32.pack(value)

    def uint32(self, value: int) -> None:
        self.out += _U32.pack(value)

    def int64(self, value: int) -> None:
        self.out += _I64.pack(value)

    def float64(self, value: float) -> None:
        self.out += _F64.pack(value)

    def boolean(self, value: bool) -> None:
        self.out.append(1 if value else 0)

    def uvarint(self, value: int) -> None:
        self.out += encode_uvarint(value)

    def varint(self, value: int) -> None:
        self.out += encode_varint(value)

    def raw(self, data: bytes | bytearray | memoryview) -> None:
        self.out += data

    def string(self, value: str | None, *, compact: bool) -> None:
        if value is None:
            self.uvarint(0) if compact else self.int16(-1)
            return
        data = value.encode("utf-8")
        self.uvarint(len(data) + 1) if compact else self.int16(len(data))
        self.out += data

    def bytes_(self, value: bytes | bytearray | memoryview | None, *, compact: bool) -> None:
        if value is None:
            self.uvarint(0) if compact else self.int32(-1)
            return
        self.uvarint(len(value) + 1) if compact else self.int32(len(value))
        self.out += value

    def array_length(self, count: int | None, *, compact: bool) -> None:
        if count is None:
            self.uvarint(0) if compact else self.int32(-1)
        else:
            self.uvarint(count + 1) if compact else self.int32(count)

    def no_tagged_fields(self) -> None:
        self.out.append(0)


def encode_uvarint(value: int) -> bytes:
    assert value >= 0, value
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_varint(value: int) -> bytes:
    """Zigzag: small negative numbers stay short (the varlong form for any 64-bit value)."""
    return encode_uvarint((value << 1) ^ (value >> 63))
