"""Produce against a real ``strom server``: real clients, every codec, acks 0/1/all, raw frames."""

from __future__ import annotations

import asyncio
import datetime
import shutil
import subprocess
import sys
import time
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from confluent_kafka import Producer
from data_clients import (
    consume,
    create_topic,
    fetch_v4,
    produce_v3,
    record_values,
    records_batch,
    unique_topic,
)
from kafka import KafkaProducer
from kio.schema.errors import ErrorCode
from kio.static.primitive import Records, i16, i32, i32Timedelta
from strom_harness import StromServer

from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey, request_type
from strom.protocol.batch import TimestampType

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def _confluent_produce(
    server: StromServer,
    topic: str,
    count: int,
    *,
    partitions: int = 1,
    settings: dict[str, str] | None = None,
) -> list[Any]:
    producer = Producer({"bootstrap.servers": server.bootstrap, "linger.ms": 5, **(settings or {})})
    reports: list[Any] = []

    def report(error: Any, message: Any) -> None:
        reports.append((error, message))

    for i in range(count):
        producer.produce(
            topic,
            key=f"key-{i}".encode(),
            value=f"value-{i}".encode() * (1 + i % 7),
            partition=i % partitions,
            headers=[("index", str(i).encode()), ("empty", b"")],
            timestamp=1_700_000_000_000 + i,
            on_delivery=report,
        )
    assert producer.flush(30) == 0
    return reports


@pytest.mark.parametrize("codec", CODECS)
def test_confluent_kafka_every_codec(strom_server: StromServer, codec: str) -> None:
    topic = create_topic(strom_server.bootstrap, unique_topic(f"codec-{codec}"), partitions=3)
    reports = _confluent_produce(
        strom_server, topic, 300, partitions=3, settings={"compression.type": codec, "acks": "all"}
    )
    assert [error for error, _ in reports if error is not None] == []
    messages = consume(strom_server.bootstrap, topic, partitions=3, count=300)
    assert len(messages) == 300
    by_index = {int(dict(m.headers())["index"]): m for m in messages}
    assert sorted(by_index) == list(range(300))
    for i, message in by_index.items():
        assert message.key() == f"key-{i}".encode()
        assert message.value() == f"value-{i}".encode() * (1 + i % 7)
        assert message.partition() == i % 3
        assert dict(message.headers())["empty"] == b""
        assert message.timestamp() == (TimestampType.CREATE_TIME + 1, 1_700_000_000_000 + i)
    # Offsets are dense per partition.
    for partition in range(3):
        offsets = sorted(m.offset() for m in messages if m.partition() == partition)
        assert offsets == list(range(100))


def test_large_requests_are_read_without_kio(strom_server: StromServer) -> None:
    """Requests of 64 KB and more are read by ``protocol.produce_request`` (records as views
    of the frame): an idempotent producer's batches of ~200 KB per partition land whole."""
    topic = create_topic(strom_server.bootstrap, unique_topic("large"), partitions=3)
    value = b"0123456789abcdef" * 512  # 8 KB
    reports: list[Any] = []
    producer = Producer(
        {
            "bootstrap.servers": strom_server.bootstrap,
            "linger.ms": 500,
            "enable.idempotence": True,
            "batch.size": 1_000_000,
        }
    )
    for i in range(75):
        producer.produce(
            topic,
            value=value + str(i).encode(),
            partition=i % 3,
            on_delivery=lambda error, message: reports.append((error, message)),
        )
    assert producer.flush(30) == 0
    assert [error for error, _ in reports if error is not None] == []
    messages = consume(strom_server.bootstrap, topic, partitions=3, count=75)
    assert sorted(m.value() for m in messages) == sorted(value + str(i).encode() for i in range(75))
    for partition in range(3):
        offsets = sorted(m.offset() for m in messages if m.partition() == partition)
        assert offsets == list(range(25))


@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_confluent_kafka_acks(strom_server: StromServer, acks: str) -> None:
    topic = create_topic(strom_server.bootstrap, unique_topic(f"acks-{acks}"))
    reports = _confluent_produce(
        strom_server, topic, 200, settings={"acks": acks, "compression.type": "lz4"}
    )
    assert [error for error, _ in reports if error is not None] == []
    if acks != "0":
        assert sorted(m.offset() for _, m in reports) == list(range(200))
    messages = consume(strom_server.bootstrap, topic, count=200)
    assert [m.value() for m in messages] == [
        f"value-{i}".encode() * (1 + i % 7) for i in range(200)
    ]


@pytest.mark.parametrize("codec", [None, "gzip", "snappy", "lz4", "zstd"])
def test_kafka_python_producer(strom_server: StromServer, codec: str | None) -> None:
    topic = create_topic(strom_server.bootstrap, unique_topic("kafka-python"), partitions=2)
    producer = KafkaProducer(
        bootstrap_servers=strom_server.bootstrap, acks="all", compression_type=codec, linger_ms=5
    )
    try:
        futures = [
            producer.send(
                topic,
                key=b"k%d" % i,
                value=b"v%d" % i,
                partition=i % 2,
                headers=[("h", b"%d" % i)],
            )
            for i in range(100)
        ]
        producer.flush(30)
        metadata = [future.get(timeout=10) for future in futures]
    finally:
        producer.close(5)
    assert sorted((m.partition, m.offset) for m in metadata) == sorted(
        (p, o) for p in range(2) for o in range(50)
    )
    messages = consume(strom_server.bootstrap, topic, partitions=2, count=100)
    assert sorted(m.value() for m in messages) == sorted(b"v%d" % i for i in range(100))
    assert all(dict(m.headers())["h"] == m.value()[1:] for m in messages)


@pytest.mark.parametrize("codec", [None, "gzip", "snappy", "lz4", "zstd"])
def test_aiokafka_producer(strom_server: StromServer, codec: str | None) -> None:
    topic = create_topic(strom_server.bootstrap, unique_topic("aiokafka"))

    async def produce() -> list[Any]:
        producer = AIOKafkaProducer(
            bootstrap_servers=strom_server.bootstrap, acks="all", compression_type=codec
        )
        await producer.start()
        try:
            sent = [
                await producer.send(topic, key=b"k%d" % i, value=b"v%d" % i, headers=[("h", b"x")])
                for i in range(50)
            ]
            return [await future for future in sent]
        finally:
            await producer.stop()

    metadata = asyncio.run(produce())
    assert [m.offset for m in metadata] == list(range(50))
    messages = consume(strom_server.bootstrap, topic, count=50)
    assert [m.value() for m in messages] == [b"v%d" % i for i in range(50)]


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed")
def test_kcat_produce_and_consume(strom_server: StromServer) -> None:
    topic = create_topic(strom_server.bootstrap, unique_topic("kcat"), partitions=2)
    lines = "".join(f"key{i}:value{i}\n" for i in range(40))
    produced = subprocess.run(
        ["kcat", "-P", "-b", strom_server.bootstrap, "-t", topic, "-K:", "-z", "snappy"],
        input=lines,
        text=True,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert produced.returncode == 0, produced.stderr
    consumed = subprocess.run(
        ["kcat", "-C", "-b", strom_server.bootstrap, "-t", topic, "-e", "-f", "%k=%s\n"],
        text=True,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert consumed.returncode == 0, consumed.stderr
    assert sorted(consumed.stdout.splitlines()) == sorted(f"key{i}=value{i}" for i in range(40))


def test_raw_produce_every_version(strom_server: StromServer) -> None:
    """Each Produce version's answer: base offset, log start offset (v5+), no error message."""
    topic = create_topic(strom_server.bootstrap, unique_topic("raw-produce"))
    expected_offset = 0
    with strom_server.connect() as wire:
        for version in KAFKA_BROKER_VERSIONS[ApiKey.PRODUCE]:
            request_class: Any = request_type(ApiKey.PRODUCE, version)
            schema: Any = sys.modules[request_class.__module__]
            body = request_class(
                transactional_id=None,
                acks=i16(-1),
                timeout=i32Timedelta.parse(datetime.timedelta(seconds=10)),
                topic_data=(
                    schema.TopicProduceData(
                        name=topic,
                        partition_data=(
                            schema.PartitionProduceData(
                                index=i32(0),
                                records=Records(records_batch([b"a", b"b", b"c"])),
                            ),
                        ),
                    ),
                ),
            )
            response = wire.request(body)
            [topic_response] = response.responses
            [partition] = topic_response.partition_responses
            assert partition.error_code == ErrorCode.none, version
            assert partition.base_offset == expected_offset
            assert partition.log_append_time is None
            if version >= 5:
                assert partition.log_start_offset == 0
            if version >= 8:
                assert partition.error_message is None
                assert partition.record_errors == ()
            expected_offset += 3


def test_log_append_time_topic(strom_server: StromServer) -> None:
    topic = create_topic(
        strom_server.bootstrap,
        unique_topic("append-time"),
        config={"message.timestamp.type": "LogAppendTime"},
    )
    before = int(time.time() * 1000)
    with strom_server.connect() as wire:
        response = wire.request(produce_v3({(topic, 0): records_batch([b"x"], timestamp=5)}))
    [partition] = response.responses[0].partition_responses
    assert partition.error_code == ErrorCode.none
    assert partition.log_append_time is not None
    stamp = int(partition.log_append_time.timestamp() * 1000)
    assert before - 1000 <= stamp <= int(time.time() * 1000) + 1000
    [message] = consume(strom_server.bootstrap, topic, count=1)
    assert message.timestamp() == (TimestampType.LOG_APPEND_TIME + 1, stamp)


def test_acks_zero_gets_no_answer_and_keeps_order(strom_server: StromServer) -> None:
    topic = create_topic(strom_server.bootstrap, unique_topic("acks0"))
    with strom_server.connect() as wire:
        for i in range(20):
            wire.send(produce_v3({(topic, 0): records_batch([b"%d" % i])}, acks=0))
        # The next answered request's response is the first frame to come back.
        response = wire.request(produce_v3({(topic, 0): records_batch([b"last"])}, acks=1))
    assert response.responses[0].partition_responses[0].base_offset == 20
    values = [m.value() for m in consume(strom_server.bootstrap, topic, count=21)]
    assert values == [b"%d" % i for i in range(20)] + [b"last"]


def test_min_isr_above_the_replica_count_asks_for_every_replica(
    strom_server: StromServer,
) -> None:
    """Kafka's effective min ISR (4.x): min.insync.replicas 2 on a one-replica topic is met by
    that replica (NOT_ENOUGH_REPLICAS on a cluster: ``test_replication``)."""
    topic = create_topic(
        strom_server.bootstrap, unique_topic("min-isr"), config={"min.insync.replicas": "2"}
    )
    with strom_server.connect() as wire:
        all_acks = wire.request(produce_v3({(topic, 0): records_batch([b"x"])}, acks=-1))
    assert all_acks.responses[0].partition_responses[0].error_code == ErrorCode.none
    assert [m.value() for m in consume(strom_server.bootstrap, topic, count=1)] == [b"x"]


def test_produce_then_fetch_same_bytes(strom_server: StromServer) -> None:
    """The bytes a producer sent come back unchanged, apart from the base offset and epoch."""
    topic = create_topic(strom_server.bootstrap, unique_topic("same-bytes"))
    batch = records_batch([b"one", b"two"], timestamp=1_000)
    with strom_server.connect() as wire:
        wire.request(produce_v3({(topic, 0): records_batch([b"zero"])}))
        wire.request(produce_v3({(topic, 0): batch}))
        response = wire.request(fetch_v4({(topic, 0): 1}))
    records = bytes(response.responses[0].partitions[0].records)
    assert records[:8] == (1).to_bytes(8, "big")
    assert records[16:] == batch[16:]  # everything from magic on, CRC and records included
    assert record_values(records) == [(1, b"one"), (2, b"two")]


def test_unknown_topic_answers_per_partition(strom_server: StromServer) -> None:
    topic = create_topic(strom_server.bootstrap, unique_topic("mixed"))
    with strom_server.connect() as wire:
        response = wire.request(
            produce_v3(
                {
                    ("no-such-topic-here", 0): records_batch([b"x"]),
                    (topic, 3): records_batch([b"x"]),
                    (topic, 0): records_batch([b"ok"]),
                }
            )
        )
    errors = {
        (t.name, p.index): p.error_code for t in response.responses for p in t.partition_responses
    }
    assert errors == {
        ("no-such-topic-here", 0): ErrorCode.unknown_topic_or_partition,
        (topic, 3): ErrorCode.unknown_topic_or_partition,
        (topic, 0): ErrorCode.none,
    }
