"""Plain confluent-kafka helpers for the Spark tests: create topics, produce, read back."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

SERVER_OVERRIDES = {
    "log.cleaner.backoff.ms": "100",
    "num.partitions": "1",
    "group.initial.rebalance.delay.ms": "0",
}
"""The Spark tests' broker settings (every Connect worker joins a new group: no 3 s wait)."""


def unique_topic(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def admin(bootstrap: str) -> Any:
    return AdminClient({"bootstrap.servers": bootstrap})


def create_topic(
    bootstrap: str, prefix: str, *, partitions: int = 1, config: Mapping[str, str] | None = None
) -> str:
    """A new topic named after ``prefix``; waits until it exists."""
    name = unique_topic(prefix)
    client = admin(bootstrap)  # kept until the result is in: a dropped client cancels it
    futures = client.create_topics(
        [NewTopic(name, partitions, 1, config=dict(config or {}))], operation_timeout=10
    )
    futures[name].result(15)
    return name


@dataclass(frozen=True)
class Record:
    """A record to produce, or one read back."""

    value: bytes | None
    key: bytes | None = None
    partition: int = 0
    headers: Sequence[tuple[str, bytes | None]] = field(default_factory=tuple)
    timestamp: int = 0
    offset: int = -1


def produce(bootstrap: str, topic: str, records: Sequence[Record]) -> None:
    """Write records in order and wait for every delivery."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for r in records:
        extra: dict[str, Any] = {}
        if r.headers:
            extra["headers"] = list(r.headers)
        if r.timestamp:
            extra["timestamp"] = r.timestamp
        producer.produce(topic, value=r.value, key=r.key, partition=r.partition, **extra)
        producer.poll(0)
    assert producer.flush(30) == 0


def produce_values(
    bootstrap: str, topic: str, count: int, *, partition: int = 0, start: int = 0
) -> None:
    produce(
        bootstrap,
        topic,
        [Record(b"v%d" % i, partition=partition) for i in range(start, start + count)],
    )


def consume_all(
    bootstrap: str, topic: str, partitions: int = 1, *, isolation: str = "read_committed"
) -> list[Record]:
    """Every record of the topic from the start to the end, as a plain consumer sees them."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": unique_topic("check"),
            "enable.partition.eof": True,
            "enable.auto.commit": False,
            "isolation.level": isolation,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        done: set[int] = set()
        out: list[Record] = []
        while len(done) < partitions:
            message: Any = consumer.poll(10)
            assert message is not None, "no end of partition within 10s"
            if message.error() is not None:
                assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
                done.add(message.partition())
                continue
            out.append(
                Record(
                    message.value(),
                    message.key(),
                    message.partition(),
                    tuple(message.headers() or ()),
                    message.timestamp()[1],
                    message.offset(),
                )
            )
        return out
    finally:
        consumer.close()
