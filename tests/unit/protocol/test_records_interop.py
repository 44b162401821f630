"""Batches from real clients' own v2 builders, and those clients reading ours.

kafka-python's builder is pure Python and needs python-snappy, lz4 and zstandard for those codecs
(skipped where missing); aiokafka's is its C extension, with every codec through cramjam and
snappy in the xerial framing the Java clients write.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypedDict

import pytest
from aiokafka.record.default_records import DefaultRecordBatch as AiokafkaBatch
from aiokafka.record.default_records import DefaultRecordBatchBuilder as AiokafkaBuilder
from kafka import codec as kafka_codec
from kafka.record.default_records import DefaultRecordBatch as KafkaPythonBatch
from kafka.record.default_records import DefaultRecordBatchBuilder as KafkaPythonBuilder

from strom.protocol.batch import HEADER_SIZE, Compression, validate_batch
from strom.protocol.compression import XERIAL_MAGIC, decompress
from strom.protocol.records import (
    ControlRecordType,
    Record,
    build_batch,
    build_control_batch,
    iter_records,
)

T0 = 1_700_000_000_000


class Producer(TypedDict):
    producer_id: int
    producer_epoch: int
    base_sequence: int


PRODUCER = Producer(producer_id=4321, producer_epoch=2, base_sequence=100)

# Compressible values, so the clients do compress (they fall back to none when it does not pay).
RECORDS = [
    Record(0, T0, b"key-0", b"value " * 50, (("trace", b"abc"), ("none", None))),
    Record(1, T0 + 10, None, b"value " * 60),
    Record(2, T0 - 3, b"", b""),
    Record(3, T0 + 4, b"key-3", None, (("\u00fcml\u00e4ut", b""),)),
    Record(4, T0 + 2, b"k" * 100, bytes(range(256)) * 40),
]

KAFKA_PYTHON_HAS = {
    Compression.NONE: True,
    Compression.GZIP: kafka_codec.has_gzip(),
    Compression.SNAPPY: kafka_codec.has_snappy(),
    Compression.LZ4: kafka_codec.has_lz4(),
    Compression.ZSTD: kafka_codec.has_zstd(),
}
KAFKA_PYTHON_CODECS = [
    pytest.param(
        codec,
        id=codec.name,
        marks=pytest.mark.skipif(
            not KAFKA_PYTHON_HAS[codec], reason=f"kafka-python has no {codec.name} library here"
        ),
    )
    for codec in Compression
]
ALL_CODECS = [pytest.param(codec, id=codec.name) for codec in Compression]

# kafka-python 3.0.12, two records (headers, a null key, an empty value), producer id 5, epoch 1,
# sequence 7, no compression: a golden frame that must decode and re-encode byte for byte.
GOLDEN = bytes.fromhex(
    "000000000000000000000048000000000248ff57cd00000000000100000000000003e800000000000003e8"
    "0000000000000005000100000007000000021e000000026b02760402680278026e010c000102010000"
)


def client_batch(builder_type: Callable[..., Any], codec: Compression, **producer: Any) -> bytes:
    builder = builder_type(
        magic=2,
        compression_type=int(codec),
        is_transactional=False,
        batch_size=1 << 20,
        **(producer or {"producer_id": -1, "producer_epoch": -1, "base_sequence": -1}),
    )
    for record in RECORDS:
        builder.append(
            record.offset, record.timestamp, record.key, record.value, list(record.headers)
        )
    return bytes(builder.build())


def check_decodes_exactly(batch: bytes, codec: Compression) -> None:
    header = validate_batch(batch, 0, len(batch), max_batch_bytes=1 << 20)  # from a client
    assert header.compression == codec
    assert header.record_count == len(RECORDS)
    assert header.max_timestamp == T0 + 10
    assert list(iter_records(batch)) == RECORDS


def client_records(reader: Any) -> list[Record]:
    return [Record(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in reader]


@pytest.mark.parametrize("codec", KAFKA_PYTHON_CODECS)
def test_kafka_python_batches_decode(codec: Compression) -> None:
    check_decodes_exactly(client_batch(KafkaPythonBuilder, codec, **PRODUCER), codec)


@pytest.mark.parametrize("codec", ALL_CODECS)
def test_aiokafka_batches_decode(codec: Compression) -> None:
    batch = client_batch(AiokafkaBuilder, codec, **PRODUCER)
    if codec == Compression.SNAPPY:
        assert batch[HEADER_SIZE:].startswith(XERIAL_MAGIC)
    check_decodes_exactly(batch, codec)


@pytest.mark.parametrize("codec", KAFKA_PYTHON_CODECS)
def test_records_section_is_byte_identical_to_kafka_python(codec: Compression) -> None:
    theirs = client_batch(KafkaPythonBuilder, codec, **PRODUCER)
    ours = build_batch(RECORDS, partition_leader_epoch=0, **PRODUCER)
    assert decompress(codec, theirs[HEADER_SIZE:]) == ours[HEADER_SIZE:]
    if codec == Compression.NONE:
        assert ours == theirs


def test_golden_kafka_python_frame() -> None:
    validate_batch(GOLDEN, 0, len(GOLDEN), max_batch_bytes=1 << 20)
    records = list(iter_records(GOLDEN))
    assert records == [
        Record(0, 1000, b"k", b"v", (("h", b"x"), ("n", None))),
        Record(1, 999, None, b""),
    ]
    again = build_batch(
        records, partition_leader_epoch=0, producer_id=5, producer_epoch=1, base_sequence=7
    )
    assert again == GOLDEN


@pytest.mark.parametrize("codec", KAFKA_PYTHON_CODECS)
def test_kafka_python_reads_our_batches(codec: Compression) -> None:
    batch = build_batch(RECORDS, base_offset=0, compression=codec, **PRODUCER)
    reader = KafkaPythonBatch(batch)
    assert reader.validate_crc()
    assert (reader.producer_id, reader.producer_epoch, reader.base_sequence) == (4321, 2, 100)
    assert reader.compression_type == codec
    assert client_records(reader) == RECORDS


@pytest.mark.parametrize("codec", ALL_CODECS)
def test_aiokafka_reads_our_batches(codec: Compression) -> None:
    batch = build_batch(
        [Record(r.offset + 1000, r.timestamp, r.key, r.value, r.headers) for r in RECORDS],
        compression=codec,
        **PRODUCER,
    )
    reader = AiokafkaBatch(batch)
    assert reader.validate_crc()
    assert reader.compression_type == codec
    assert (reader.base_offset, reader.next_offset) == (1000, 1005)
    assert client_records(reader) == [
        Record(r.offset + 1000, r.timestamp, r.key, r.value, r.headers) for r in RECORDS
    ]


@pytest.mark.parametrize("kind", list(ControlRecordType), ids=lambda k: k.name)
def test_clients_read_our_control_batches(kind: ControlRecordType) -> None:
    batch = build_control_batch(
        kind, producer_id=9, producer_epoch=1, coordinator_epoch=3, base_offset=77, timestamp=T0
    )
    kafka_python = KafkaPythonBatch(batch)
    assert kafka_python.is_control_batch and kafka_python.is_transactional
    (marker,) = list(kafka_python)
    assert (marker.offset, marker.version, marker.type) == (77, 0, kind)
    aiokafka = AiokafkaBatch(batch)
    assert aiokafka.is_control_batch and aiokafka.is_transactional
    (record,) = list(aiokafka)
    assert record.offset == 77
