"""ListOffsets against a real ``strom server``: watermarks, time lookups, every raw version."""

from __future__ import annotations

import datetime
import sys
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._listoffsets import OffsetSpec
from data_clients import consumer, create_topic, produce_v3, unique_topic
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition
from kio.schema.errors import ErrorCode
from kio.static.primitive import i8, i32, i32Timedelta, i64
from strom_harness import StromServer

from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey, request_type
from strom.protocol.records import Record, build_batch

BASE = 1_700_000_000_000
_SPEC: Any = OffsetSpec  # its factory methods are untyped


@pytest.fixture(scope="module")
def timed_topic(strom_server: StromServer) -> str:
    """Partition 0: offsets 0..5 with timestamps BASE+0, +10, +20 (batch 1), +30, +50, +40
    (batch 2, the largest timestamp at offset 4); partition 1 empty."""
    topic = create_topic(strom_server.bootstrap, unique_topic("timed"), partitions=2)
    with strom_server.connect() as wire:
        for values, timestamps in (
            ([b"a", b"b", b"c"], [0, 10, 20]),
            ([b"d", b"e", b"f"], [30, 50, 40]),
        ):
            batch = build_batch(
                [
                    Record(i, BASE + t, None, v)
                    for i, (v, t) in enumerate(zip(values, timestamps, strict=True))
                ]
            )
            response = wire.request(produce_v3({(topic, 0): batch}))
            assert response.responses[0].partition_responses[0].error_code == ErrorCode.none
    return topic


def list_offsets(
    server: StromServer,
    version: int,
    partitions: list[tuple[str, int, int]],
    *,
    isolation_level: int = 0,
    replica_id: int = -1,
    current_leader_epoch: int = -1,
) -> dict[tuple[str, int], Any]:
    request_class: Any = request_type(ApiKey.LIST_OFFSETS, version)
    schema: Any = sys.modules[request_class.__module__]
    topics: dict[str, list[Any]] = {}
    for name, partition, timestamp in partitions:
        fields: dict[str, Any] = {"partition_index": i32(partition), "timestamp": i64(timestamp)}
        if version >= 4:
            fields["current_leader_epoch"] = i32(current_leader_epoch)
        topics.setdefault(name, []).append(schema.ListOffsetsPartition(**fields))
    body: dict[str, Any] = {
        "replica_id": i32(replica_id),
        "topics": tuple(
            schema.ListOffsetsTopic(name=name, partitions=tuple(parts))
            for name, parts in topics.items()
        ),
    }
    if version >= 2:
        body["isolation_level"] = i8(isolation_level)
    if version >= 10:
        body["timeout"] = i32Timedelta.parse(datetime.timedelta(seconds=5))
    with server.connect() as wire:
        response = wire.request(request_class(**body))
    return {(t.name, p.partition_index): p for t in response.topics for p in t.partitions}


@pytest.mark.parametrize("version", list(KAFKA_BROKER_VERSIONS[ApiKey.LIST_OFFSETS]))
def test_raw_list_offsets_every_version(
    strom_server: StromServer, timed_topic: str, version: int
) -> None:
    cases = [
        (-2, 0, -1),
        (-1, 6, -1),
        (BASE, 0, BASE),
        (BASE + 15, 2, BASE + 20),
        (BASE + 45, 4, BASE + 50),
        (BASE + 51, -1, -1),
    ]
    if version >= 7:
        cases.append((-3, 4, BASE + 50))
    if version >= 8:
        cases.append((-4, 0, -1))
    for timestamp, offset, found_timestamp in cases:
        answers = list_offsets(strom_server, version, [(timed_topic, 0, timestamp)])
        answer = answers[(timed_topic, 0)]
        assert answer.error_code == ErrorCode.none, (version, timestamp)
        assert (answer.offset, answer.timestamp) == (offset, found_timestamp), (version, timestamp)
        if version >= 4:
            assert answer.leader_epoch == (-1 if offset == -1 else 0)


def test_raw_list_offsets_errors(strom_server: StromServer, timed_topic: str) -> None:
    answers = list_offsets(
        strom_server,
        7,
        [(timed_topic, 0, -1), (timed_topic, 0, -2), (timed_topic, 7, -1), ("nope", 0, -1)],
    )
    assert answers[(timed_topic, 0)].error_code == ErrorCode.invalid_request
    assert answers[(timed_topic, 7)].error_code == ErrorCode.unknown_topic_or_partition
    assert answers[("nope", 0)].error_code == ErrorCode.unknown_topic_or_partition
    fenced = list_offsets(strom_server, 7, [(timed_topic, 0, -1)], current_leader_epoch=3)
    assert fenced[(timed_topic, 0)].error_code == ErrorCode.unknown_leader_epoch


def test_raw_list_offsets_empty_partition(strom_server: StromServer, timed_topic: str) -> None:
    answers = list_offsets(
        strom_server, 9, [(timed_topic, 1, t) for t in (-1,)] + [(timed_topic, 0, -5)]
    )
    assert (answers[(timed_topic, 1)].offset, answers[(timed_topic, 1)].error_code) == (
        0,
        ErrorCode.none,
    )
    assert answers[(timed_topic, 0)].offset == -1  # latest tiered: nothing is tiered


def test_confluent_watermarks_and_times(strom_server: StromServer, timed_topic: str) -> None:
    reader = consumer(strom_server.bootstrap)
    try:
        assert reader.get_watermark_offsets(TopicPartition(timed_topic, 0), timeout=10) == (0, 6)
        assert reader.get_watermark_offsets(TopicPartition(timed_topic, 1), timeout=10) == (0, 0)
        found = reader.offsets_for_times(
            [
                TopicPartition(timed_topic, 0, BASE + 25),
                TopicPartition(timed_topic, 1, BASE),
            ],
            timeout=10,
        )
        assert [(tp.partition, tp.offset) for tp in found] == [(0, 3), (1, OFFSET_END)]
    finally:
        reader.close()


def test_confluent_list_offsets_admin(strom_server: StromServer, timed_topic: str) -> None:
    client = AdminClient({"bootstrap.servers": strom_server.bootstrap})
    specs = {
        TopicPartition(timed_topic, 0): _SPEC.earliest(),
        TopicPartition(timed_topic, 1): _SPEC.latest(),
    }
    results = {tp.partition: f.result(10).offset for tp, f in client.list_offsets(specs).items()}
    assert results == {0: 0, 1: 0}
    max_spec = {TopicPartition(timed_topic, 0): _SPEC.max_timestamp()}
    [answer] = [f.result(10) for f in client.list_offsets(max_spec).values()]
    assert (answer.offset, answer.timestamp) == (4, BASE + 50)


def test_kafka_python_offsets(strom_server: StromServer, timed_topic: str) -> None:
    reader = KafkaConsumer(bootstrap_servers=strom_server.bootstrap)
    try:
        partitions = [KafkaTopicPartition(timed_topic, p) for p in (0, 1)]
        assert reader.beginning_offsets(partitions) == dict.fromkeys(partitions, 0)
        assert reader.end_offsets(partitions) == {partitions[0]: 6, partitions[1]: 0}
        found = reader.offsets_for_times({partitions[0]: BASE + 35})
        assert found[partitions[0]] is not None
        assert (found[partitions[0]].offset, found[partitions[0]].timestamp) == (4, BASE + 50)
    finally:
        reader.close()


def test_seek_to_beginning_constant(strom_server: StromServer, timed_topic: str) -> None:
    """A consumer assigned at OFFSET_BEGINNING resolves it through ListOffsets."""
    reader = consumer(strom_server.bootstrap)
    try:
        reader.assign([TopicPartition(timed_topic, 0, OFFSET_BEGINNING)])
        message = None
        for _ in range(40):
            message = reader.poll(0.5)
            if message is not None:
                break
        assert message is not None and message.offset() == 0
    finally:
        reader.close()
