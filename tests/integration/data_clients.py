"""What the data-path integration tests share: topics through the admin API, consuming, raw
produce and fetch requests (``from data_clients import ...``)."""

from __future__ import annotations

import datetime
import itertools
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v4.request import FetchPartition as FetchPartitionV4
from kio.schema.fetch.v4.request import FetchRequest as FetchRequestV4
from kio.schema.fetch.v4.request import FetchTopic as FetchTopicV4
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic
from kio.schema.produce.v3.request import PartitionProduceData as PartitionProduceDataV3
from kio.schema.produce.v3.request import ProduceRequest as ProduceRequestV3
from kio.schema.produce.v3.request import TopicProduceData as TopicProduceDataV3
from kio.schema.types import TopicName, TransactionalId
from kio.static.primitive import Records, i8, i16, i32, i32Timedelta, i64
from strom_harness import KafkaWire

from strom.protocol.api import ApiKey, request_type
from strom.protocol.records import Record, build_batch, iter_records

_counter = itertools.count()


def unique_topic(prefix: str) -> str:
    return f"{prefix}-{next(_counter)}-{uuid.uuid4().hex[:8]}"


COORDINATOR_WAIT: frozenset[ErrorCode] = frozenset(
    {ErrorCode.coordinator_not_available, ErrorCode.coordinator_load_in_progress}
)
"""The coordinator errors a client waits out and retries at the same coordinator (not
NOT_COORDINATOR, which sends it to FindCoordinator)."""


def coordinator_request(
    wire: KafkaWire, body: Any, error_of: Callable[[Any], int], *, seconds: float = 15.0
) -> Any:
    """The first answer to ``body`` whose error (``error_of``) is not one of
    :data:`COORDINATOR_WAIT`, as a client retries; the last one once ``seconds`` have passed."""
    deadline = time.monotonic() + seconds
    while True:
        response = wire.request(body)
        if error_of(response) not in COORDINATOR_WAIT or time.monotonic() > deadline:
            return response
        time.sleep(0.05)


def admin(bootstrap: str) -> Any:
    return AdminClient({"bootstrap.servers": bootstrap})


def create_topic(
    bootstrap: str,
    name: str,
    *,
    partitions: int = 1,
    config: Mapping[str, str] | None = None,
) -> str:
    """Create a topic through CreateTopics (the metadata path) and wait for it."""
    client = admin(bootstrap)  # referenced until the answer: a dropped client cancels it
    futures = client.create_topics(
        [NewTopic(name, partitions, 1, config=dict(config or {}))], operation_timeout=10
    )
    futures[name].result(timeout=15)
    return name


def topic_id(bootstrap: str, name: str) -> uuid.UUID:
    """The topic's id, from a Metadata request (raw, v12)."""
    host, port = bootstrap.rsplit(":", 1)
    with KafkaWire(host, int(port)) as wire:
        response = wire.request(
            MetadataRequest(
                topics=(MetadataRequestTopic(topic_id=None, name=TopicName(name)),),
                allow_auto_topic_creation=False,
                include_topic_authorized_operations=False,
            )
        )
    [topic] = response.topics
    return uuid.UUID(str(topic.topic_id))


def consumer(bootstrap: str, **settings: Any) -> Any:
    config = {
        "bootstrap.servers": bootstrap,
        "group.id": f"strom-test-{uuid.uuid4().hex[:8]}",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    }
    config.update(settings)
    return Consumer(config)


def consume(
    bootstrap: str,
    topic: str,
    *,
    partitions: int = 1,
    count: int,
    timeout: float = 30.0,
    start: int = 0,
    **settings: Any,
) -> list[Any]:
    """``count`` messages of ``topic`` read with an assigned confluent-kafka consumer."""
    reader = consumer(bootstrap, **settings)
    try:
        reader.assign([TopicPartition(topic, p, start) for p in range(partitions)])
        messages: list[Any] = []
        deadline = time.monotonic() + timeout
        while len(messages) < count and time.monotonic() < deadline:
            message = reader.poll(0.5)
            if message is None:
                continue
            if message.error():
                raise KafkaException(message.error())
            messages.append(message)
        return messages
    finally:
        reader.close()


def records_batch(
    values: Sequence[bytes],
    *,
    timestamp: int | None = None,
    key: bytes | None = None,
    **kwargs: Any,
) -> bytes:
    now = int(time.time() * 1000) if timestamp is None else timestamp
    return build_batch([Record(i, now + i, key, value) for i, value in enumerate(values)], **kwargs)


def produce_v3(
    partitions: Mapping[tuple[str, int], bytes | None],
    *,
    acks: int = 1,
    timeout_ms: int = 10_000,
    transactional_id: str | None = None,
) -> ProduceRequestV3:
    """A Produce v3 request: ``(topic, partition) -> records``, in that order."""
    topics: dict[str, list[PartitionProduceDataV3]] = {}
    for (name, partition), records in partitions.items():
        topics.setdefault(name, []).append(
            PartitionProduceDataV3(
                index=i32(partition), records=None if records is None else Records(records)
            )
        )
    return ProduceRequestV3(
        transactional_id=None if transactional_id is None else TransactionalId(transactional_id),
        acks=i16(acks),
        timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=timeout_ms)),
        topic_data=tuple(
            TopicProduceDataV3(name=TopicName(name), partition_data=tuple(parts))
            for name, parts in topics.items()
        ),
    )


def produce_request(version: int, topic: str, records: bytes, *, acks: int = 1) -> Any:
    """A Produce request of ``version`` (up to 12: topics by name) for partition 0 of ``topic``."""
    request_class: Any = request_type(ApiKey.PRODUCE, version)
    schema: Any = sys.modules[request_class.__module__]
    return request_class(
        transactional_id=None,
        acks=i16(acks),
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=10)),
        topic_data=(
            schema.TopicProduceData(
                name=TopicName(topic),
                partition_data=(
                    schema.PartitionProduceData(index=i32(0), records=Records(records)),
                ),
            ),
        ),
    )


def fetch_v4(
    partitions: Mapping[tuple[str, int], int],
    *,
    max_wait_ms: int = 0,
    min_bytes: int = 1,
    max_bytes: int = 50 * 1024 * 1024,
    partition_max_bytes: int = 1024 * 1024,
) -> FetchRequestV4:
    """A sessionless Fetch v4: ``(topic, partition) -> fetch offset``."""
    topics: dict[str, list[FetchPartitionV4]] = {}
    for (name, partition), offset in partitions.items():
        topics.setdefault(name, []).append(
            FetchPartitionV4(
                partition=i32(partition),
                fetch_offset=i64(offset),
                partition_max_bytes=i32(partition_max_bytes),
            )
        )
    return FetchRequestV4(
        max_wait=i32Timedelta.parse(datetime.timedelta(milliseconds=max_wait_ms)),
        min_bytes=i32(min_bytes),
        max_bytes=i32(max_bytes),
        isolation_level=i8(0),
        topics=tuple(
            FetchTopicV4(topic=TopicName(name), partitions=tuple(parts))
            for name, parts in topics.items()
        ),
    )


def record_values(records: bytes | None) -> list[tuple[int, bytes | None]]:
    """(offset, value) of every record in a fetched records field."""
    if not records:
        return []
    out: list[tuple[int, bytes | None]] = []
    position = 0
    data = bytes(records)
    while position + 12 <= len(data):
        length = int.from_bytes(data[position + 8 : position + 12], "big")
        end = position + 12 + length
        if end > len(data):
            break  # a partial batch at the end of a fetch: clients skip it
        out.extend((r.offset, r.value) for r in iter_records(data[position:end]))
        position = end
    return out
