"""Transactional offset commits (``send_offsets_to_transaction``) with confluent-kafka's and
kafka-python's producers against a real ``strom server``: the group's committed offsets change
only when the transaction commits, never when it aborts, and a read_committed consumer asking
for its committed offsets meanwhile (OffsetFetch with require_stable) waits for the outcome;
after a kill -9 and a restart, decided transactions stay decided and an open one stays pending
until it is aborted."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer, TopicPartition
from data_clients import admin, create_topic, unique_topic
from kafka import KafkaProducer
from kafka.structs import OffsetAndMetadata
from kafka.structs import TopicPartition as KafkaTopicPartition
from kio.schema.offset_fetch.v6 import request as fetch_v6
from kio.schema.offset_fetch.v7 import request as fetch_v7
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i32
from strom_harness import StartServer, StromServer
from wire_recorder import WireRecorder, recorded_server

from strom.common import ErrorCode
from strom.protocol.api import ApiKey

pytestmark = pytest.mark.timeout(60)

PARTITIONS = 2
RECORDS = 10
NO_OFFSET = -1001
"""librdkafka's OFFSET_INVALID: the group has no committed offset."""


OVERRIDES = {"group.initial.rebalance.delay.ms": "0"}


@pytest.fixture(scope="module")
def recorded(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[StromServer, WireRecorder]]:
    """The module's server, every client's requests after the first metadata recorded."""
    base = tmp_path_factory.mktemp("strom-txn-offsets")
    with recorded_server(base / "data", overrides=OVERRIDES) as pair:
        yield pair


@pytest.fixture
def server(recorded: tuple[StromServer, WireRecorder]) -> StromServer:
    return recorded[0]


def _wait_until_unstable(recorder: WireRecorder, since: int) -> None:
    """Wait until an OffsetFetch sent after the first ``since`` exchanges was answered
    UNSTABLE_OFFSET_COMMIT (librdkafka's committed() then retries until the outcome)."""
    recorder.wait_for(
        lambda exchanges: any(
            e.api_key == ApiKey.OFFSET_FETCH and e.answered_with(ErrorCode.unstable_offset_commit)
            for e in exchanges[since:]
        ),
        "the broker answers OffsetFetch with UNSTABLE_OFFSET_COMMIT",
    )


def _topic_with_records(bootstrap: str) -> str:
    topic = create_topic(bootstrap, unique_topic("txn-offsets"), partitions=PARTITIONS)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(RECORDS):
        producer.produce(topic, value=b"%d" % i, partition=i % PARTITIONS)
    assert producer.flush(10) == 0
    return topic


def _committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    """The group's committed offsets as an admin sees them (no require_stable)."""
    request = ConsumerGroupTopicPartitions(
        group, [TopicPartition(topic, p) for p in range(PARTITIONS)]
    )
    client = admin(bootstrap)
    result = client.list_consumer_group_offsets([request])[group].result(timeout=10)
    return {tp.partition: tp.offset for tp in result.topic_partitions}


def _subscribed_consumer(bootstrap: str, group: str, topic: str) -> Any:
    """A read_committed group member that has read every record of ``topic``."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )
    consumer.subscribe([topic])
    seen = 0
    deadline = time.monotonic() + 20
    while seen < RECORDS:
        assert time.monotonic() < deadline, f"read {seen} of {RECORDS} records"
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            seen += 1
    return consumer


def test_confluent_offsets_appear_only_on_commit(
    recorded: tuple[StromServer, WireRecorder],
) -> None:
    server, recorder = recorded
    bootstrap = server.bootstrap
    topic = _topic_with_records(bootstrap)
    group = unique_topic("txn-group")
    consumer = _subscribed_consumer(bootstrap, group, topic)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{group}-txn"})
    try:
        producer.init_transactions(20)
        positions = consumer.position(consumer.assignment())
        assert sorted(tp.offset for tp in positions) == [RECORDS // 2] * PARTITIONS
        nothing = dict.fromkeys(range(PARTITIONS), NO_OFFSET)

        producer.begin_transaction()
        producer.produce(topic, value=b"in the aborted transaction")
        producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 20)
        assert _committed(bootstrap, group, topic) == nothing
        producer.abort_transaction(20)
        assert _committed(bootstrap, group, topic) == nothing

        producer.begin_transaction()
        producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 20)
        assert _committed(bootstrap, group, topic) == nothing
        # a read_committed member's OffsetFetch (require_stable) waits for the decision
        fetched: list[Any] = []
        waiter = threading.Thread(
            target=lambda: fetched.append(consumer.committed(positions, timeout=20))
        )
        since = len(recorder.recorded())
        waiter.start()
        _wait_until_unstable(recorder, since)
        assert not fetched, "committed() returned while the transaction was open"
        producer.commit_transaction(20)
        waiter.join(25)
        expected = dict.fromkeys(range(PARTITIONS), RECORDS // 2)
        assert {tp.partition: tp.offset for tp in fetched[0]} == expected
        assert _committed(bootstrap, group, topic) == expected
    finally:
        consumer.close()


def test_kafka_python_offsets_appear_only_on_commit(server: StromServer) -> None:
    bootstrap = server.bootstrap
    topic = _topic_with_records(bootstrap)
    group = unique_topic("txn-group")
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"{group}-txn")
    try:
        producer.init_transactions()
        expected = dict.fromkeys(range(PARTITIONS), NO_OFFSET)
        for offset, commit in ((3, False), (4, True), (9, False)):
            offsets = {
                KafkaTopicPartition(topic, p): OffsetAndMetadata(offset + p, "", -1)
                for p in range(PARTITIONS)
            }
            producer.begin_transaction()
            producer.send(topic, value=b"x", partition=0)
            producer.send_offsets_to_transaction(offsets, group)
            producer.flush()
            assert _committed(bootstrap, group, topic) == expected  # not while open
            if commit:
                producer.commit_transaction()
                expected = {p: offset + p for p in range(PARTITIONS)}
            else:
                producer.abort_transaction()
            assert _committed(bootstrap, group, topic) == expected
        assert expected == {0: 4, 1: 5}
    finally:
        producer.close(timeout=5)


def _send_offsets(
    producer: Any, metadata: Any, topic: str, offset: int, *, commit: bool | None
) -> None:
    """One transaction committing ``offset`` for every partition (None: leave it open)."""
    producer.begin_transaction()
    offsets = [TopicPartition(topic, p, offset) for p in range(PARTITIONS)]
    producer.send_offsets_to_transaction(offsets, metadata, 20)
    if commit is True:
        producer.commit_transaction(20)
    elif commit is False:
        producer.abort_transaction(20)


def test_decided_and_open_transactions_survive_a_restart(
    start_server: StartServer, tmp_path: Path
) -> None:
    server = start_server(data_dir=tmp_path / "data")
    topic = _topic_with_records(server.bootstrap)
    group = unique_topic("txn-group")
    member = Consumer({"bootstrap.servers": server.bootstrap, "group.id": group})
    metadata = member.consumer_group_metadata()  # a simple group's: no generation
    committer = Producer({"bootstrap.servers": server.bootstrap, "transactional.id": "txn-a"})
    committer.init_transactions(20)
    _send_offsets(committer, metadata, topic, 2, commit=True)
    _send_offsets(committer, metadata, topic, 7, commit=False)
    left_open = Producer({"bootstrap.servers": server.bootstrap, "transactional.id": "txn-b"})
    left_open.init_transactions(20)
    _send_offsets(left_open, metadata, topic, 4, commit=None)
    member.close()
    server.stop(signal.SIGKILL)

    with recorded_server(tmp_path / "data", overrides=OVERRIDES) as (restarted, recorder):
        _read_after_restart(restarted, recorder, group, topic)


def _read_after_restart(
    restarted: StromServer, recorder: WireRecorder, group: str, topic: str
) -> None:
    expected = dict.fromkeys(range(PARTITIONS), 2)
    assert _committed(restarted.bootstrap, group, topic) == expected
    reader = Consumer(
        {
            "bootstrap.servers": restarted.bootstrap,
            "group.id": group,
            "isolation.level": "read_committed",
        }
    )
    try:
        fetched: list[Any] = []
        positions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        waiter = threading.Thread(
            target=lambda: fetched.append(reader.committed(positions, timeout=20))
        )
        since = len(recorder.recorded())
        waiter.start()
        _wait_until_unstable(recorder, since)
        assert not fetched, "the open transaction's offsets were not pending after the restart"
        # the same transactional id again: the open transaction is aborted
        Producer(
            {"bootstrap.servers": restarted.bootstrap, "transactional.id": "txn-b"}
        ).init_transactions(20)
        waiter.join(25)
        assert {tp.partition: tp.offset for tp in fetched[0]} == expected
    finally:
        reader.close()


def test_offset_fetch_v7_require_stable(server: StromServer) -> None:
    """The non-batched OffsetFetch: v7 honours require_stable, v6 has none."""
    bootstrap = server.bootstrap
    topic = _topic_with_records(bootstrap)
    group = unique_topic("txn-group")
    member = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"{group}-txn"})
    producer.init_transactions(20)
    _send_offsets(producer, member.consumer_group_metadata(), topic, 3, commit=None)
    member.close()
    partitions = (i32(0), i32(1))

    def fetched(body: Any) -> list[tuple[int, ErrorCode]]:
        with server.connect() as wire:
            response = wire.request(body)
        assert response.error_code == ErrorCode.none
        return [(p.committed_offset, p.error_code) for t in response.topics for p in t.partitions]

    stable = fetch_v7.OffsetFetchRequest(
        group_id=GroupId(group),
        topics=(
            fetch_v7.OffsetFetchRequestTopic(name=TopicName(topic), partition_indexes=partitions),
        ),
        require_stable=True,
    )
    plain = fetch_v6.OffsetFetchRequest(
        group_id=GroupId(group),
        topics=(
            fetch_v6.OffsetFetchRequestTopic(name=TopicName(topic), partition_indexes=partitions),
        ),
    )
    assert fetched(stable) == [(-1, ErrorCode.unstable_offset_commit)] * PARTITIONS
    assert fetched(plain) == [(-1, ErrorCode.none)] * PARTITIONS
    producer.commit_transaction(20)
    assert fetched(stable) == [(3, ErrorCode.none)] * PARTITIONS
