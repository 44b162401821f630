"""Fetch against a real ``strom server``: consumers, long polls, byte limits, every version."""

from __future__ import annotations

import asyncio
import datetime
import shutil
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka import TopicPartition as AioTopicPartition
from confluent_kafka import Producer
from data_clients import (
    consume,
    create_topic,
    fetch_v4,
    produce_v3,
    record_values,
    records_batch,
    topic_id,
    unique_topic,
)
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition
from kio.schema.errors import ErrorCode
from kio.static.primitive import i8, i32, i32Timedelta, i64
from strom_harness import StromServer
from wire_recorder import Exchange, recorded_server

from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey, request_type


def _produce(server: StromServer, topic: str, values: dict[int, list[bytes]]) -> None:
    with server.connect() as wire:
        for partition, batch_values in values.items():
            response = wire.request(produce_v3({(topic, partition): records_batch(batch_values)}))
            assert response.responses[0].partition_responses[0].error_code == ErrorCode.none


def fetch_request(
    version: int,
    partitions: dict[tuple[str, int], int],
    *,
    topic_ids: dict[str, uuid.UUID] | None = None,
    max_wait_ms: int = 0,
    min_bytes: int = 1,
    max_bytes: int = 50 * 1024 * 1024,
    partition_max_bytes: int = 1024 * 1024,
    session_id: int = 0,
    session_epoch: int = -1,
    forgotten: dict[str, list[int]] | None = None,
    isolation_level: int = 0,
) -> Any:
    """A Fetch request of any version (by topic id from v13)."""
    request_class: Any = request_type(ApiKey.FETCH, version)
    schema: Any = sys.modules[request_class.__module__]
    by_id = version >= 13

    def topic_fields(name: str) -> dict[str, Any]:
        if by_id:
            return {"topic_id": (topic_ids or {})[name]}
        return {"topic": name}

    topics: dict[str, list[Any]] = {}
    for (name, partition), offset in partitions.items():
        topics.setdefault(name, []).append(
            schema.FetchPartition(
                partition=i32(partition),
                fetch_offset=i64(offset),
                partition_max_bytes=i32(partition_max_bytes),
            )
        )
    fields: dict[str, Any] = {
        "max_wait": i32Timedelta.parse(datetime.timedelta(milliseconds=max_wait_ms)),
        "min_bytes": i32(min_bytes),
        "max_bytes": i32(max_bytes),
        "isolation_level": i8(isolation_level),
        "topics": tuple(
            schema.FetchTopic(**topic_fields(name), partitions=tuple(parts))
            for name, parts in topics.items()
        ),
    }
    if version >= 7:
        fields["session_id"] = i32(session_id)
        fields["session_epoch"] = i32(session_epoch)
        fields["forgotten_topics_data"] = tuple(
            schema.ForgottenTopic(
                **topic_fields(name), partitions=tuple(i32(p) for p in partition_list)
            )
            for name, partition_list in (forgotten or {}).items()
        )
    return request_class(**fields)


def partitions_of(response: Any) -> dict[int, Any]:
    return {p.partition_index: p for topic in response.responses for p in topic.partitions}


@pytest.mark.parametrize("version", list(KAFKA_BROKER_VERSIONS[ApiKey.FETCH]))
def test_raw_fetch_every_version(strom_server: StromServer, version: int) -> None:
    topic = create_topic(strom_server.bootstrap, unique_topic(f"fetch-v{version}"), partitions=2)
    _produce(strom_server, topic, {0: [b"a", b"b"], 1: [b"c"]})
    _produce(strom_server, topic, {0: [b"d"]})
    ids = {topic: topic_id(strom_server.bootstrap, topic)}
    with strom_server.connect() as wire:
        response = wire.request(
            fetch_request(version, {(topic, 0): 1, (topic, 1): 0}, topic_ids=ids)
        )
    [topic_response] = response.responses
    if version >= 13:
        assert topic_response.topic_id == ids[topic]
    else:
        assert topic_response.topic == topic
    partitions = partitions_of(response)
    assert partitions[0].error_code == ErrorCode.none
    assert partitions[0].high_watermark == 3
    assert partitions[0].last_stable_offset == 3
    if version >= 5:
        assert partitions[0].log_start_offset == 0
    # Whole batches from the one holding offset 1: the client skips offset 0 itself.
    assert record_values(partitions[0].records) == [(0, b"a"), (1, b"b"), (2, b"d")]
    assert record_values(partitions[1].records) == [(0, b"c")]
    assert partitions[1].high_watermark == 1
    if version >= 7:
        assert response.error_code == ErrorCode.none
        assert response.session_id == 0
    if version >= 11:
        assert partitions[0].preferred_read_replica == -1
    assert partitions[0].aborted_transactions is None


def test_fetch_read_committed_has_empty_aborted_list(strom_server: StromServer) -> None:
    topic = create_topic(strom_server.bootstrap, unique_topic("read-committed"))
    _produce(strom_server, topic, {0: [b"x"]})
    with strom_server.connect() as wire:
        response = wire.request(fetch_request(12, {(topic, 0): 0}, isolation_level=1))
    [partition] = partitions_of(response).values()
    assert partition.aborted_transactions == ()
    assert record_values(partition.records) == [(0, b"x")]


def test_fetch_errors(strom_server: StromServer) -> None:
    topic = create_topic(strom_server.bootstrap, unique_topic("fetch-errors"))
    _produce(strom_server, topic, {0: [b"x"]})
    with strom_server.connect() as wire:
        out_of_range = wire.request(fetch_v4({(topic, 0): 5}))
        unknown = wire.request(fetch_v4({("no-such-topic", 0): 0, (topic, 9): 0}))
        by_id = wire.request(
            fetch_request(
                13, {("ghost", 0): 0}, topic_ids={"ghost": uuid.uuid4()}, max_wait_ms=5000
            )
        )
    [partition] = partitions_of(out_of_range).values()
    assert partition.error_code == ErrorCode.offset_out_of_range
    assert partition.high_watermark == -1
    errors = {
        (t.topic, p.partition_index): p.error_code for t in unknown.responses for p in t.partitions
    }
    assert errors == {
        ("no-such-topic", 0): ErrorCode.unknown_topic_or_partition,
        (topic, 9): ErrorCode.unknown_topic_or_partition,
    }
    [partition] = partitions_of(by_id).values()
    assert partition.error_code == ErrorCode.unknown_topic_id


def test_fetch_byte_limits(strom_server: StromServer) -> None:
    topic = create_topic(strom_server.bootstrap, unique_topic("limits"), partitions=3)
    value = b"x" * 1000
    for _ in range(5):
        _produce(strom_server, topic, {p: [value] for p in range(3)})
    everything = {(topic, p): 0 for p in range(3)}
    with strom_server.connect() as wire:
        full = wire.request(fetch_v4(everything))
        tiny_partition = wire.request(fetch_v4(everything, partition_max_bytes=10))
        tiny_total = wire.request(fetch_v4(everything, max_bytes=10))
        two_batches = wire.request(fetch_v4(everything, max_bytes=2500))
    batch_size = len(bytes(partitions_of(tiny_partition)[0].records))
    assert 1000 < batch_size < 1200
    assert all(len(record_values(p.records)) == 5 for p in partitions_of(full).values())
    # KIP-74: only the first batch of the response comes whole over the limits, the partition's
    # or the request's; the later partitions then get nothing.
    assert [len(bytes(p.records)) for p in partitions_of(tiny_partition).values()] == [
        batch_size,
        0,
        0,
    ]
    assert [len(bytes(p.records)) for p in partitions_of(tiny_total).values()] == [
        batch_size,
        0,
        0,
    ]
    sizes = [len(bytes(p.records)) for p in partitions_of(two_batches).values()]
    # Two whole batches, maybe followed by part of the next (a read may cut the last batch;
    # clients skip the partial batch, as with Kafka).
    assert sum(sizes) <= 2500
    assert 2 * batch_size <= sizes[0]
    assert len(record_values(partitions_of(two_batches)[0].records)) == 2


def test_long_poll_wakes_on_produce(strom_server: StromServer) -> None:
    topic = create_topic(strom_server.bootstrap, unique_topic("long-poll"))
    timer = threading.Timer(0.5, _produce, args=(strom_server, topic, {0: [b"late"]}))
    with strom_server.connect(timeout=30) as wire:
        started = time.monotonic()
        timer.start()
        response = wire.request(fetch_v4({(topic, 0): 0}, max_wait_ms=20_000, min_bytes=1))
        waited = time.monotonic() - started
    timer.join()
    [partition] = partitions_of(response).values()
    assert record_values(partition.records) == [(0, b"late")]
    assert 0.4 < waited < 10  # woken by the append, long before max_wait


def test_long_poll_waits_for_min_bytes_then_times_out(strom_server: StromServer) -> None:
    topic = create_topic(strom_server.bootstrap, unique_topic("min-bytes"))
    _produce(strom_server, topic, {0: [b"small"]})
    with strom_server.connect(timeout=30) as wire:
        started = time.monotonic()
        response = wire.request(fetch_v4({(topic, 0): 0}, max_wait_ms=300, min_bytes=10_000))
        waited = time.monotonic() - started
    [partition] = partitions_of(response).values()
    assert record_values(partition.records) == [(0, b"small")]
    assert waited >= 0.25


def test_pipelined_long_polls_keep_order(strom_server: StromServer) -> None:
    """A long poll delays only its own connection's later answers, which stay in order."""
    topic = create_topic(strom_server.bootstrap, unique_topic("pipelined"))
    with strom_server.connect(timeout=30) as wire, strom_server.connect() as other:
        first = wire.send(fetch_v4({(topic, 0): 0}, max_wait_ms=1000, min_bytes=1))
        second = wire.send(fetch_v4({(topic, 0): 0}, max_wait_ms=0))
        # Meanwhile another connection is served at once.
        _produce(strom_server, topic, {0: [b"x"]})
        assert other.request(fetch_v4({(topic, 0): 0})).responses[0].partitions[0].records
        answered = [wire.read_response(api_key=ApiKey.FETCH, api_version=4)[0] for _ in range(2)]
    assert answered == [first, second]


def test_raw_fetch_sessions(strom_server: StromServer) -> None:
    topic = create_topic(strom_server.bootstrap, unique_topic("sessions"), partitions=3)
    _produce(strom_server, topic, {p: [b"p%d" % p] for p in range(3)})
    offsets = {(topic, p): 0 for p in range(3)}
    with strom_server.connect() as wire:
        full = wire.request(fetch_request(12, offsets, session_epoch=0))
        session = full.session_id
        assert session > 0
        assert len(partitions_of(full)) == 3
        # Incremental, positions moved past the data: partitions with new offsets only.
        moved = {(topic, p): 1 for p in range(3)}
        step1 = wire.request(fetch_request(12, moved, session_id=session, session_epoch=1))
        assert step1.session_id == session
        assert partitions_of(step1) == {}  # nothing changed: no partition answered
        step2 = wire.request(fetch_request(12, {}, session_id=session, session_epoch=2))
        assert partitions_of(step2) == {}
        _produce(strom_server, topic, {1: [b"new"]})
        step3 = wire.request(fetch_request(12, {}, session_id=session, session_epoch=3))
        assert list(partitions_of(step3)) == [1]
        assert record_values(partitions_of(step3)[1].records) == [(1, b"new")]
        # Forget partition 1; an epoch replayed or unknown session are errors.
        step4 = wire.request(
            fetch_request(12, {}, session_id=session, session_epoch=4, forgotten={topic: [1]})
        )
        assert step4.error_code == ErrorCode.none
        stale = wire.request(fetch_request(12, {}, session_id=session, session_epoch=4))
        assert stale.error_code == ErrorCode.invalid_fetch_session_epoch
        assert stale.responses == ()
        missing = wire.request(fetch_request(12, {}, session_id=session + 1, session_epoch=1))
        assert missing.error_code == ErrorCode.fetch_session_id_not_found
        # Close it.
        closed = wire.request(fetch_request(12, offsets, session_id=session, session_epoch=-1))
        assert closed.session_id == 0
        gone = wire.request(fetch_request(12, {}, session_id=session, session_epoch=5))
        assert gone.error_code == ErrorCode.fetch_session_id_not_found


def test_raw_fetch_session_by_topic_id(strom_server: StromServer) -> None:
    topic = create_topic(strom_server.bootstrap, unique_topic("sessions-ids"), partitions=2)
    ids = {topic: topic_id(strom_server.bootstrap, topic)}
    with strom_server.connect() as wire:
        full = wire.request(
            fetch_request(16, {(topic, 0): 0, (topic, 1): 0}, topic_ids=ids, session_epoch=0)
        )
        session = full.session_id
        assert session > 0
        _produce(strom_server, topic, {0: [b"x"]})
        step = wire.request(
            fetch_request(16, {}, topic_ids=ids, session_id=session, session_epoch=1)
        )
        [topic_response] = step.responses
        assert topic_response.topic_id == ids[topic]
        assert [p.partition_index for p in topic_response.partitions] == [0]
        # Switching to topic names in the same session is refused.
        switched = wire.request(fetch_request(12, {}, session_id=session, session_epoch=2))
        assert switched.error_code == ErrorCode.fetch_session_topic_id_error


def test_confluent_consumer_many_partitions(strom_server: StromServer) -> None:
    topic = create_topic(strom_server.bootstrap, unique_topic("confluent-many"), partitions=12)
    producer = Producer({"bootstrap.servers": strom_server.bootstrap, "linger.ms": 2})
    for i in range(1200):
        producer.produce(topic, value=b"%d" % i, partition=i % 12)
    assert producer.flush(30) == 0
    messages = consume(strom_server.bootstrap, topic, partitions=12, count=1200)
    assert sorted(int(m.value()) for m in messages) == list(range(1200))
    for partition in range(12):
        values = [int(m.value()) for m in messages if m.partition() == partition]
        assert values == sorted(values)


def test_kafka_python_incremental_sessions(
    strom_server: StromServer, caplog: pytest.LogCaptureFixture
) -> None:
    """kafka-python uses KIP-227 sessions: a full fetch, then incremental ones, many partitions."""
    partitions = 24
    topic = create_topic(strom_server.bootstrap, unique_topic("kp-sessions"), partitions=partitions)
    producer = KafkaProducer(bootstrap_servers=strom_server.bootstrap, linger_ms=2)
    reader = KafkaConsumer(
        bootstrap_servers=strom_server.bootstrap,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=200,
    )
    received: dict[int, list[int]] = {p: [] for p in range(partitions)}
    caplog.set_level("DEBUG", logger="kafka.consumer.fetcher")
    try:
        reader.assign([KafkaTopicPartition(topic, p) for p in range(partitions)])
        total = 0
        for wave in range(5):
            for i in range(wave * 240, (wave + 1) * 240):
                producer.send(topic, value=b"%d" % i, partition=i % partitions)
            producer.flush(10)
            deadline = time.monotonic() + 20
            while total < (wave + 1) * 240 and time.monotonic() < deadline:
                for tp, records in reader.poll(timeout_ms=500).items():
                    received[tp.partition].extend(int(r.value) for r in records)
                    total += len(records)
    finally:
        reader.close()
        producer.close(5)
    assert sorted(v for values in received.values() for v in values) == list(range(1200))
    for partition, values in received.items():
        assert values == [v for v in range(1200) if v % partitions == partition]
    log_text = caplog.text
    assert "created a new incremental fetch session" in log_text
    assert "sent an incremental fetch response for session" in log_text
    assert "error" not in log_text.lower()


def test_kafka_python_long_poll(strom_server: StromServer) -> None:
    topic = create_topic(strom_server.bootstrap, unique_topic("kp-long-poll"))
    reader = KafkaConsumer(
        bootstrap_servers=strom_server.bootstrap,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        fetch_max_wait_ms=5000,
    )
    try:
        reader.assign([KafkaTopicPartition(topic, 0)])
        assert reader.poll(timeout_ms=300) == {}
        threading.Timer(0.3, _produce, args=(strom_server, topic, {0: [b"wake"]})).start()
        started = time.monotonic()
        got: list[bytes] = []
        while not got and time.monotonic() - started < 10:
            for records in reader.poll(timeout_ms=1000).values():
                got.extend(r.value for r in records)
        assert got == [b"wake"]
    finally:
        reader.close()


def test_aiokafka_consumer(strom_server: StromServer) -> None:
    topic = create_topic(strom_server.bootstrap, unique_topic("aiokafka-consumer"), partitions=4)
    _produce(strom_server, topic, {p: [b"%d-%d" % (p, i) for i in range(25)] for p in range(4)})

    async def read() -> list[bytes]:
        reader = AIOKafkaConsumer(
            bootstrap_servers=strom_server.bootstrap,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        await reader.start()
        try:
            reader.assign([AioTopicPartition(topic, p) for p in range(4)])
            values: list[bytes] = []
            deadline = time.monotonic() + 20
            while len(values) < 100 and time.monotonic() < deadline:
                batches = await reader.getmany(timeout_ms=500)
                values.extend(r.value for records in batches.values() for r in records)
            return values
        finally:
            await reader.stop()

    values = asyncio.run(read())
    assert sorted(values) == sorted(b"%d-%d" % (p, i) for p in range(4) for i in range(25))


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed")
def test_kcat_consumes_with_offsets(strom_server: StromServer) -> None:
    topic = create_topic(strom_server.bootstrap, unique_topic("kcat-consume"))
    _produce(strom_server, topic, {0: [b"a", b"b"]})
    _produce(strom_server, topic, {0: [b"c"]})
    result = subprocess.run(
        ["kcat", "-C", "-b", strom_server.bootstrap, "-t", topic, "-o", "1", "-e", "-f", "%o:%s\n"],
        text=True,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["1:b", "2:c"]


def _parked_fetches(exchanges: list[Exchange]) -> list[Exchange]:
    return [e for e in exchanges if e.api_key == ApiKey.FETCH and e.response is None]


def test_consumer_sees_records_produced_while_waiting(tmp_path: Path) -> None:
    """A confluent-kafka consumer whose Fetch is parked at the broker gets a record produced
    afterwards, as soon as it is appended."""
    with recorded_server(tmp_path / "data") as (server, recorder):
        topic = create_topic(recorder.address, unique_topic("waiting"))
        results: list[Any] = []
        thread = threading.Thread(
            target=lambda: results.extend(
                consume(recorder.address, topic, count=1, timeout=20, **{"fetch.wait.max.ms": 5000})
            )
        )
        thread.start()
        exchanges = recorder.wait_for(
            lambda exchanges: any(_parked_fetches(exchanges)),
            "the consumer's Fetch waits at the broker",
        )
        (parked,) = _parked_fetches(exchanges)
        assert not results
        _produce(server, topic, {0: [b"hello"]})
        thread.join(30)
        assert parked.response is not None and b"hello" in parked.response, (
            "the waiting Fetch was not the one answered with the record"
        )
    assert [m.value() for m in results] == [b"hello"]
