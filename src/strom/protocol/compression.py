"""The record batch codecs, through cramjam: gzip, snappy, lz4 (frame) and zstd.

A v2 batch compresses everything after its 61-byte header as one block. What each codec means on
the wire, as Kafka's clients write it:

- gzip: a gzip member (RFC 1952).
- snappy: either one raw snappy block (librdkafka, and what :func:`compress` writes) or the xerial
  framing of the Java clients: ``b"\\x82SNAPPY\\x00"``, int32 version, int32 minimum compatible
  version, then ``[int32 length][raw snappy block]`` chunks. :func:`decompress` reads both.
- lz4: the LZ4 frame format with independent blocks (KIP-57); the Java reader rejects linked
  blocks, so :func:`compress` never writes them.
- zstd: a zstd frame.
"""

from __future__ import annotations

import struct
from typing import Final

import cramjam

from strom.common import ErrorCode, KafkaError
from strom.protocol.batch import Compression

XERIAL_MAGIC: Final = b"\x82SNAPPY\x00"
XERIAL_HEADER_SIZE: Final = 16
"""The magic, then int32 version and int32 minimum compatible version (both 1 as Java writes)."""

DEFAULT_LEVELS: Final = {Compression.GZIP: 6, Compression.LZ4: 9, Compression.ZSTD: 3}
"""Kafka's defaults for ``compression.{gzip,lz4,zstd}.level`` (KIP-390)."""

_INT32 = struct.Struct(">i")


def compress(codec: Compression, data: bytes | memoryview, *, level: int | None = None) -> bytes:
    """Compress ``data`` as a batch's records section; ``level`` defaults to Kafka's."""
    if codec == Compression.NONE:
        return bytes(data)
    if level is None:
        level = DEFAULT_LEVELS.get(codec)
    if codec == Compression.GZIP:
        return bytes(cramjam.gzip.compress(data, level=level))
    if codec == Compression.SNAPPY:
        return bytes(cramjam.snappy.compress_raw(data))
    if codec == Compression.LZ4:
        compressor = cramjam.lz4.Compressor(level=level, content_checksum=False, block_linked=False)
        compressor.compress(data if isinstance(data, bytes) else bytes(data))  # takes only bytes
        return bytes(compressor.finish())
    if codec == Compression.ZSTD:
        return bytes(cramjam.zstd.compress(data, level=level))
    raise KafkaError(ErrorCode.unsupported_compression_type, f"unknown codec {codec!r}")


def decompress(codec: Compression, data: bytes | memoryview) -> bytes:
    """Undo :func:`compress` (or any Kafka client's compression); bad input is CORRUPT_MESSAGE."""
    try:
        if codec == Compression.NONE:
            return bytes(data)
        if codec == Compression.GZIP:
            return bytes(cramjam.gzip.decompress(data))
        if codec == Compression.SNAPPY:
            if bytes(data[: len(XERIAL_MAGIC)]) == XERIAL_MAGIC:
                return _decompress_xerial(memoryview(data))
            return bytes(cramjam.snappy.decompress_raw(data))
        if codec == Compression.LZ4:
            return bytes(cramjam.lz4.decompress(data))
        if codec == Compression.ZSTD:
            return bytes(cramjam.zstd.decompress(data))
    except cramjam.DecompressionError as error:
        raise KafkaError(
            ErrorCode.corrupt_message, f"cannot decompress {codec.name} records: {error}"
        ) from error
    raise KafkaError(ErrorCode.unsupported_compression_type, f"unknown codec {codec!r}")


def _decompress_xerial(data: memoryview) -> bytes:
    if len(data) < XERIAL_HEADER_SIZE:
        raise KafkaError(ErrorCode.corrupt_message, "truncated xerial snappy header")
    chunks: list[bytes] = []
    position, end = XERIAL_HEADER_SIZE, len(data)
    while position < end:
        if end - position < _INT32.size:
            raise KafkaError(ErrorCode.corrupt_message, "truncated xerial snappy chunk length")
        (length,) = _INT32.unpack_from(data, position)
        position += _INT32.size
        if length < 0 or length > end - position:
            raise KafkaError(
                ErrorCode.corrupt_message,
                f"xerial snappy chunk of {length} bytes, {end - position} left",
            )
        chunks.append(bytes(cramjam.snappy.decompress_raw(data[position : position + length])))
        position += length
    return b"".join(chunks)
