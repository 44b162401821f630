"""Per-record rules of a topic against a real server: compacted topics refuse keyless
records (INVALID_RECORD with record_errors), and ``compression.type`` recompresses batches."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka import TopicPartition as AioTopicPartition
from confluent_kafka import Producer
from data_clients import consume, create_topic, produce_request, records_batch, unique_topic
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition
from kafka.errors import InvalidRecordError
from kio.schema.errors import ErrorCode
from strom_harness import StartServer, StromServer

from strom.protocol.batch import Compression, scan_batches


def _confluent_send(bootstrap: str, topic: str, values: list[bytes], **settings: Any) -> list[Any]:
    """Send ``values`` (keyless); return each delivery's error (None when delivered)."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **settings})
    errors: list[Any] = []
    for value in values:
        producer.produce(topic, value=value, on_delivery=lambda error, _: errors.append(error))
    assert producer.flush(30) == 0
    return errors


def test_compacted_topic_refuses_keyless_records_confluent(strom_server: StromServer) -> None:
    topic = create_topic(
        strom_server.bootstrap, unique_topic("compact-keys"), config={"cleanup.policy": "compact"}
    )
    errors = _confluent_send(strom_server.bootstrap, topic, [b"no key"], retries=0)
    assert [error.name() for error in errors] == ["INVALID_RECORD"]
    producer = Producer({"bootstrap.servers": strom_server.bootstrap})
    delivered: list[Any] = []
    producer.produce(topic, key=b"k", value=b"v", on_delivery=lambda e, m: delivered.append(e))
    producer.flush(30)
    assert delivered == [None]


def test_compacted_topic_refuses_keyless_records_kafka_python(strom_server: StromServer) -> None:
    topic = create_topic(
        strom_server.bootstrap,
        unique_topic("compact-keys-kp"),
        config={"cleanup.policy": "compact,delete"},
    )
    producer = KafkaProducer(bootstrap_servers=strom_server.bootstrap, retries=0)
    try:
        future = producer.send(topic, value=b"no key")
        with pytest.raises(InvalidRecordError):
            future.get(timeout=30)
        assert producer.send(topic, key=b"k", value=b"v").get(timeout=30).offset == 0
    finally:
        producer.close(5)


def test_produce_v9_carries_record_errors(strom_server: StromServer) -> None:
    topic = create_topic(
        strom_server.bootstrap, unique_topic("compact-raw"), config={"cleanup.policy": "compact"}
    )
    body = produce_request(9, topic, records_batch([b"a", b"b", b"c"], key=None))
    with strom_server.connect() as wire:
        [partition] = wire.request(body).responses[0].partition_responses
    message = f"Compacted topic cannot accept message without key in topic partition {topic}-0."
    assert partition.error_code == ErrorCode.invalid_record
    assert (partition.base_offset, partition.log_start_offset) == (-1, 0)
    assert [(e.batch_index, e.batch_index_error_message) for e in partition.record_errors] == [
        (0, message),
        (1, message),
        (2, message),
    ]
    assert partition.error_message.startswith(
        "One or more records have been rejected due to 3 record errors in total"
    )


def _stored_codecs(data_dir: Path, topic: str) -> list[Compression]:
    segment = data_dir / f"{topic}-0" / f"{0:020d}.log"
    found, _ = scan_batches(segment.read_bytes())
    return [header.compression for _, header in found]


def _kafka_python_values(bootstrap: str, topic: str, count: int) -> list[bytes]:
    reader = KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
    )
    values: list[bytes] = []
    try:
        reader.assign([KafkaTopicPartition(topic, 0)])
        deadline = time.monotonic() + 20
        while len(values) < count and time.monotonic() < deadline:
            for records in reader.poll(timeout_ms=500).values():
                values.extend(r.value for r in records)
    finally:
        reader.close()
    return values


def _aiokafka_values(bootstrap: str, topic: str, count: int) -> list[bytes]:
    async def read() -> list[bytes]:
        reader = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
        )
        await reader.start()
        try:
            reader.assign([AioTopicPartition(topic, 0)])
            values: list[bytes] = []
            deadline = time.monotonic() + 20
            while len(values) < count and time.monotonic() < deadline:
                batches = await reader.getmany(timeout_ms=500)
                values.extend(r.value for records in batches.values() for r in records)
            return values
        finally:
            await reader.stop()

    return asyncio.run(read())


def test_zstd_topic_stores_zstd_batches(start_server: StartServer, tmp_path: Path) -> None:
    server = start_server()
    topic = create_topic(
        server.bootstrap, unique_topic("zstd-topic"), config={"compression.type": "zstd"}
    )
    expected = [b"plain-%d" % i for i in range(20)]
    assert (
        _confluent_send(server.bootstrap, topic, expected, **{"compression.type": "none"})
        == [None] * 20
    )
    gzipped = [b"gzip-%d" % i for i in range(20)]
    assert (
        _confluent_send(server.bootstrap, topic, gzipped, **{"compression.type": "gzip"})
        == [None] * 20
    )
    expected += gzipped
    producer = KafkaProducer(bootstrap_servers=server.bootstrap, compression_type="gzip")
    try:
        for i in range(5):
            producer.send(topic, value=b"kp-%d" % i).get(timeout=30)
    finally:
        producer.close(5)
    expected += [b"kp-%d" % i for i in range(5)]
    codecs = _stored_codecs(tmp_path / "data", topic)
    assert codecs and set(codecs) == {Compression.ZSTD}
    confluent = [m.value() for m in consume(server.bootstrap, topic, count=len(expected))]
    assert confluent == expected
    assert _kafka_python_values(server.bootstrap, topic, len(expected)) == expected
    assert _aiokafka_values(server.bootstrap, topic, len(expected)) == expected
