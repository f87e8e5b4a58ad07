"""Compressed batches: the codec bits of a batch's attributes, and compressing and expanding its records.

A batch whose attributes name a codec (bits 0-2, Kafka's values: 1 gzip, 2 snappy, 3 lz4, 4 zstd)
carries its records section -- every byte after the 61-byte header -- compressed as one block; the
header itself, `record_count` included, stays as it is. The CRC covers the bytes as sent, so the
compressed ones: a batch is checked before it is expanded, and a broker that only stores and hands
on batches never expands them. Expanded, the records are laid out exactly as in an uncompressed
batch (batch.py), so every reader and checker of records works on the expansion unchanged.

Formats (docs/record-format.md, for writers in other languages): gzip is RFC 1952 (one member);
snappy is the raw block format (no framing); lz4 is the LZ4 frame format; zstd is one Zstandard
frame. A codec value of 5 to 7 is refused as unsupported. Expanding is bounded
(`EXPANDED_BYTES_MAX`), so a small batch cannot make its reader allocate without limit.

Errors: `UnsupportedCompressionError` (an unknown codec; a broker answers it with its own error
code) and `CorruptRecordError` (the bytes do not expand, or not to a well-formed size). The codec
libraries are imported on first use, so a process that never meets a compressed batch never loads them.
"""

from __future__ import annotations

import threading
import zlib

from crc32c import crc32c

from .batch import (
    CRC_COVERED,
    HEADER,
    HEADER_SIZE,
    MIN_BATCH_LENGTH,
    PREFIX,
    BatchHeader,
    CorruptRecordError,
    RecordTooLargeError,
)

COMPRESSION_NONE = 0
COMPRESSION_GZIP = 1
COMPRESSION_SNAPPY = 2
COMPRESSION_LZ4 = 3
COMPRESSION_ZSTD = 4
COMPRESSION_CODEC_MASK = 0x07  # attribute bits 0-2
CODECS = {"none": COMPRESSION_NONE, "gzip": COMPRESSION_GZIP, "snappy": COMPRESSION_SNAPPY,
          "lz4": COMPRESSION_LZ4, "zstd": COMPRESSION_ZSTD}
CODEC_NAMES = {value: name for name, value in CODECS.items()}
# The most bytes a batch's records may expand to. A producer closes a batch long before (its
# batch_bytes_max counts the records uncompressed); a reader refuses more as corrupt.
EXPANDED_BYTES_MAX = 64 * 1024 * 1024
GZIP_LEVEL = 6  # zlib's default
ZSTD_LEVEL = 3  # zstd's default

_new_tuple = tuple.__new__


class UnsupportedCompressionError(CorruptRecordError):
    """A batch names a codec this format does not know (attribute bits 0-2 set to 5, 6 or 7)."""


def codec_of(name: str) -> int:
    """A codec's attribute value from its name ("none", "gzip", "snappy", "lz4", "zstd"); ValueError otherwise."""
    try:
        return CODECS[name]
    except KeyError:
        raise ValueError(f"unknown compression type {name!r}; expected one of {', '.join(CODECS)}") from None


def compress(codec: int, data: bytes) -> bytes:
    """`data` compressed with `codec` (not COMPRESSION_NONE)."""
    if codec == COMPRESSION_ZSTD:
        return _zstd().compressor.compress(data)
    if codec == COMPRESSION_LZ4:
        import lz4.frame

        return lz4.frame.compress(data)
    if codec == COMPRESSION_GZIP:
        return zlib.compress(data, GZIP_LEVEL, 31)  # wbits 31: a gzip member, its time field 0
    if codec == COMPRESSION_SNAPPY:
        import cramjam

        return bytes(cramjam.snappy.compress_raw(data))
    raise UnsupportedCompressionError(f"compression codec {codec} is not one of {sorted(CODEC_NAMES)}")


def expand(codec: int, data: bytes | memoryview, limit: int = EXPANDED_BYTES_MAX) -> bytes:
    """`data` expanded with `codec`; CorruptRecordError when it does not expand, or to more than `limit` bytes."""
    try:
        if codec == COMPRESSION_ZSTD:
            out = _expand_zstd(bytes(data), limit)
        elif codec == COMPRESSION_LZ4:
            out = _expand_lz4(bytes(data), limit)
        elif codec == COMPRESSION_GZIP:
            out = _expand_gzip(data, limit)
        elif codec == COMPRESSION_SNAPPY:
            out = _expand_snappy(bytes(data), limit)
        else:
            raise UnsupportedCompressionError(f"compression codec {codec} is not one of {sorted(CODEC_NAMES)}")
    except CorruptRecordError:
        raise
    except Exception as exc:  # noqa: BLE001 - each library has its own error types; all mean "does not expand"
        raise CorruptRecordError(f"the {CODEC_NAMES[codec]} records do not decompress: {exc}") from None
    return out


def _too_large(codec: int, limit: int) -> CorruptRecordError:
    return CorruptRecordError(f"the {CODEC_NAMES[codec]} records expand to more than {limit} bytes")


def _expand_gzip(data: bytes | memoryview, limit: int) -> bytes:
    expander = zlib.decompressobj(31)
    out = expander.decompress(data, limit + 1)
    if len(out) > limit:
        raise _too_large(COMPRESSION_GZIP, limit)
    if not expander.eof or expander.unused_data or expander.unconsumed_tail:
        raise CorruptRecordError("the gzip records are cut short or followed by other bytes")
    return out


def _expand_snappy(data: bytes, limit: int) -> bytes:
    import cramjam

    size, shift = 0, 0
    for byte in data[:5]:  # the block starts with its expanded length, a little-endian base-128 varint
        size |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            break
    if size > limit:
        raise _too_large(COMPRESSION_SNAPPY, limit)
    return bytes(cramjam.snappy.decompress_raw(data))


def _expand_lz4(data: bytes, limit: int) -> bytes:
    import lz4.frame

    expander = lz4.frame.LZ4FrameDecompressor()
    out = expander.decompress(data, max_length=limit + 1)
    if len(out) > limit:
        raise _too_large(COMPRESSION_LZ4, limit)
    if not expander.eof or expander.unused_data:
        raise CorruptRecordError("the lz4 records are cut short or followed by other bytes")
    return out


def _expand_zstd(data: bytes, limit: int) -> bytes:
    import zstandard

    stated = zstandard.frame_content_size(data)
    if stated > limit:
        raise _too_large(COMPRESSION_ZSTD, limit)
    out = _zstd().decompressor.decompress(data, max_output_size=limit + 1)
    if len(out) > limit:
        raise _too_large(COMPRESSION_ZSTD, limit)
    return out


class _ZstdContexts(threading.local):
    """A zstd context costs an allocation of its window: one per thread, made on first use."""

    def __init__(self) -> None:
        import zstandard

        self.compressor = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
        self.decompressor = zstandard.ZstdDecompressor()


_contexts: _ZstdContexts | None = None


def _zstd() -> _ZstdContexts:
    global _contexts
    if _contexts is None:
        _contexts = _ZstdContexts()
    return _contexts


# --- whole batches -------------------------------------------------------------------------------


def expanded_batch(buf: bytes | bytearray | memoryview, pos: int,
                   header: BatchHeader) -> tuple[bytes, BatchHeader]:
    """The compressed batch at `pos` (whose header is `header`) as an uncompressed one, at position 0:
    its header bytes as they are followed by the expanded records, and a header whose codec bits are
    clear and whose length is the expansion's. Only for reading its records: its CRC is the original's."""
    codec = header.attributes & COMPRESSION_CODEC_MASK
    records = expand(codec, memoryview(buf)[pos + HEADER_SIZE : pos + header.size_bytes])
    plain = _new_tuple(BatchHeader, (header.base_offset, MIN_BATCH_LENGTH + len(records)) + header[2:5]
                       + (header.attributes & ~COMPRESSION_CODEC_MASK,) + header[6:])
    return bytes(memoryview(buf)[pos : pos + HEADER_SIZE]) + records, plain


def recompressed(batch: bytes | bytearray | memoryview, header: BatchHeader, codec: int) -> tuple[bytes, BatchHeader]:
    """The validated `batch` (its header `header`) with its records compressed by `codec` instead (none
    included), its CRC computed anew; the same batch when it already uses `codec`. What a leader does
    for a topic whose `compression.type` is not `producer`: like a LogAppendTime stamp (batch.py), one
    rewrite of the CRC after its producer, after the producer's was checked."""
    current = header.attributes & COMPRESSION_CODEC_MASK
    if current == codec:
        return bytes(batch), header
    body = memoryview(batch)[HEADER_SIZE : header.size_bytes]
    records = expand(current, body) if current else bytes(body)
    body = compress(codec, records) if codec else records
    batch_length = MIN_BATCH_LENGTH + len(body)
    if batch_length > 2**31 - 1:
        raise RecordTooLargeError(f"batch of {batch_length} bytes exceeds the format's limit")
    covered_head = CRC_COVERED.pack((header.attributes & ~COMPRESSION_CODEC_MASK) | codec, *header[6:])
    crc = crc32c(body, crc32c(covered_head))
    prefix = PREFIX.pack(header.base_offset, batch_length, header.partition_leader_epoch, header.magic, crc)
    return b"".join((prefix, covered_head, body)), _new_tuple(BatchHeader, HEADER.unpack_from(prefix + covered_head))
