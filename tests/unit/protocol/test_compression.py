"""The batch codecs: round trips, what each writes, xerial snappy, corrupt input."""

from __future__ import annotations

import gzip
import struct

import cramjam
import pytest
from aiokafka import codec as aiokafka_codec
from hypothesis import given
from hypothesis import strategies as st

from strom.common import ErrorCode, KafkaError
from strom.protocol.batch import Compression
from strom.protocol.compression import XERIAL_MAGIC, compress, decompress

CODECS = list(Compression)
COMPRESSED = [codec for codec in Compression if codec != Compression.NONE]
# Compressible and bigger than one xerial chunk (32 KiB) and one lz4 block (64 KiB).
LARGE = bytes((i * 7) % 251 for i in range(200_000))


def xerial_frame(*chunks: bytes) -> bytes:
    """What Java's SnappyOutputStream writes: header, then [int32 length][raw snappy] chunks."""
    parts = [XERIAL_MAGIC, struct.pack(">ii", 1, 1)]
    for chunk in chunks:
        block = bytes(cramjam.snappy.compress_raw(chunk))
        parts += [struct.pack(">i", len(block)), block]
    return b"".join(parts)


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
@pytest.mark.parametrize("data", [b"", b"x", b"hello kafka" * 100, LARGE], ids=len)
def test_round_trip(codec: Compression, data: bytes) -> None:
    compressed = compress(codec, data)
    assert isinstance(compressed, bytes)
    assert decompress(codec, compressed) == data
    assert decompress(codec, memoryview(bytearray(compressed))) == data


@given(codec=st.sampled_from(CODECS), data=st.binary(max_size=5000))
def test_round_trip_any_bytes(codec: Compression, data: bytes) -> None:
    assert decompress(codec, compress(codec, memoryview(data))) == data


def test_none_passes_bytes_through() -> None:
    assert compress(Compression.NONE, memoryview(b"abc")) == b"abc"
    assert decompress(Compression.NONE, b"abc") == b"abc"


def test_compression_shrinks_compressible_data() -> None:
    for codec in COMPRESSED:
        assert len(compress(codec, LARGE)) < len(LARGE) // 10, codec.name


def test_level_is_optional_and_round_trips() -> None:
    for codec, level in [(Compression.GZIP, 1), (Compression.LZ4, 1), (Compression.ZSTD, 19)]:
        assert decompress(codec, compress(codec, LARGE, level=level)) == LARGE


def test_snappy_writes_raw_snappy_like_librdkafka() -> None:
    compressed = compress(Compression.SNAPPY, LARGE)
    assert not compressed.startswith(XERIAL_MAGIC)
    assert bytes(cramjam.snappy.decompress_raw(compressed)) == LARGE


def test_lz4_writes_a_frame_with_independent_blocks() -> None:
    compressed = compress(Compression.LZ4, LARGE)
    assert compressed[:4] == b"\x04\x22\x4d\x18"  # LZ4 frame magic
    flags = compressed[4]
    assert flags >> 6 == 0b01  # frame version
    assert flags & 0x20  # block independence: Java's KafkaLZ4BlockInputStream needs it


def test_gzip_reads_and_writes_standard_gzip() -> None:
    assert decompress(Compression.GZIP, gzip.compress(LARGE)) == LARGE
    assert gzip.decompress(compress(Compression.GZIP, LARGE)) == LARGE


def test_xerial_snappy_is_decoded() -> None:
    chunks = [LARGE[:32768], LARGE[32768:65536], LARGE[65536:70000]]
    assert decompress(Compression.SNAPPY, xerial_frame(*chunks)) == b"".join(chunks)


def test_xerial_snappy_with_no_chunks_or_an_empty_chunk() -> None:
    assert decompress(Compression.SNAPPY, xerial_frame()) == b""
    assert decompress(Compression.SNAPPY, xerial_frame(b"", b"abc")) == b"abc"


def test_xerial_snappy_as_a_real_client_writes_it() -> None:
    framed = aiokafka_codec.snappy_encode(LARGE, xerial_compatible=True)
    assert framed.startswith(XERIAL_MAGIC)
    assert decompress(Compression.SNAPPY, framed) == LARGE
    assert aiokafka_codec.snappy_decode(compress(Compression.SNAPPY, LARGE)) == LARGE


def test_real_client_lz4_and_zstd() -> None:
    assert decompress(Compression.LZ4, aiokafka_codec.lz4_encode(LARGE)) == LARGE
    assert decompress(Compression.ZSTD, aiokafka_codec.zstd_encode(LARGE)) == LARGE
    assert aiokafka_codec.lz4_decode(compress(Compression.LZ4, LARGE)) == LARGE
    assert aiokafka_codec.zstd_decode(compress(Compression.ZSTD, LARGE)) == LARGE


def assert_corrupt(codec: Compression, data: bytes) -> None:
    with pytest.raises(KafkaError) as caught:
        decompress(codec, data)
    assert caught.value.error_code == ErrorCode.corrupt_message


@pytest.mark.parametrize("codec", COMPRESSED, ids=lambda c: c.name)
def test_garbage_is_corrupt_message(codec: Compression) -> None:
    assert_corrupt(codec, b"this is not compressed data at all")
    assert_corrupt(codec, b"")


@pytest.mark.parametrize("codec", COMPRESSED, ids=lambda c: c.name)
def test_truncated_data_is_corrupt_message(codec: Compression) -> None:
    compressed = compress(codec, LARGE)
    assert_corrupt(codec, compressed[: len(compressed) // 2])


@pytest.mark.parametrize(
    "frame",
    [
        XERIAL_MAGIC + b"\x00\x00\x00\x01",  # header cut short
        xerial_frame(b"abc") + b"\x00\x00",  # chunk length cut short
        xerial_frame(b"abc")[:-1],  # chunk shorter than its length
        xerial_frame() + struct.pack(">i", -5) + b"xxxxx",  # negative chunk length
        xerial_frame() + struct.pack(">i", 5) + b"\xff\xff\xff\xff\xff",  # bad snappy chunk
    ],
    ids=["header", "length", "chunk", "negative", "garbage"],
)
def test_bad_xerial_frames_are_corrupt_message(frame: bytes) -> None:
    assert_corrupt(Compression.SNAPPY, frame)


@given(codec=st.sampled_from(COMPRESSED), data=st.binary(max_size=300))
def test_arbitrary_input_decompresses_or_is_corrupt_message(
    codec: Compression, data: bytes
) -> None:
    try:
        decompress(codec, data)
    except KafkaError as error:
        assert error.error_code == ErrorCode.corrupt_message
