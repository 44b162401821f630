"""DescribeTopicPartitions (API key 75), v0: topics' partitions with their eligible leader
replicas (KIP-966), paged; what Kafka's admin client describes topics with from 3.8 on, and
what ``strom topics describe`` reads.

Kafka's rules (``DescribeTopicPartitionsRequestHandler``, ``KRaftMetadataCache``): no topics
named means every topic; topics are answered in name order from the cursor's topic on (a
cursor whose topic the request does not name, or with a negative partition, is INVALID_REQUEST);
at most ``min(response_partition_limit, max.request.partition.size.limit)`` partitions are
answered, and ``next_cursor`` names where the next request starts. A named topic that does not
exist answers UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for an illegal name). A
partition whose leader is away has leader -1 and no error, unlike Metadata.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final

from kio.schema.describe_topic_partitions.v0 import request as newest
from kio.schema.describe_topic_partitions.v0 import response as latest
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode
from strom.controller import ZERO_UUID, invalid_topic_reason, is_internal
from strom.metadata import PartitionRegistration, TopicImage
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.security.acls import AclOperation, ResourceType
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import as_newest
from strom.server.api.metadata_view import MetadataView
from strom.server.api.throttle import NO_THROTTLE
from strom.server.handlers.common import authorized_operations, broker_addresses

__all__ = ["DescribeTopicPartitionsHandler"]

log = logging.getLogger(__name__)


class DescribeTopicPartitionsHandler:
    api_key: Final = ApiKey.DESCRIBE_TOPIC_PARTITIONS
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.DESCRIBE_TOPIC_PARTITIONS]

    def __init__(self, metadata: MetadataView, *, partition_limit: Callable[[], int]) -> None:
        """``partition_limit()``: ``max.request.partition.size.limit`` as it now is."""
        self._metadata = metadata
        self._partition_limit = partition_limit

    async def handle(self, context: RequestContext) -> ResponsePayload:
        request = as_newest(context.body, newest.DescribeTopicPartitionsRequest)
        image = self._metadata.image
        cursor = request.cursor
        start_topic = "" if cursor is None else str(cursor.topic_name)
        every_topic = not request.topics
        if every_topic:
            names = sorted(name for name in image.topics.topics_by_name if name >= start_topic)
        else:
            names = sorted({str(t.name) for t in request.topics if str(t.name) >= start_topic})
            if cursor is not None and start_topic not in names:
                return _invalid(
                    request, f"the request does not name the cursor's topic {start_topic!r}"
                )
        if cursor is not None and cursor.partition_index < 0:
            return _invalid(request, f"the cursor's partition {cursor.partition_index} is negative")
        limit = max(min(self._partition_limit(), int(request.response_partition_limit)), 1)
        alive = {address.node_id for address in broker_addresses(image, context.listener_name)}
        topics: list[latest.DescribeTopicPartitionsResponseTopic] = []
        next_cursor: latest.Cursor | None = None
        for name in names:
            if limit == 0:
                next_cursor = latest.Cursor(topic_name=TopicName(name), partition_index=i32(0))
                break
            topic = image.topic(name)
            if not context.authorize(
                AclOperation.DESCRIBE, ResourceType.TOPIC, name, audit=not every_topic
            ):  # as Metadata: left out of an all-topics answer, refused when named
                if not every_topic:
                    topics.append(_missing(name, ErrorCode.topic_authorization_failed))
                continue
            if topic is None:
                if not every_topic:
                    topics.append(_missing(name))
                continue
            operations = authorized_operations(context, ResourceType.TOPIC, name)
            first = cursor.partition_index if cursor is not None and name == start_topic else 0
            end = min(len(topic.partitions), first + limit)
            topics.append(_topic(topic, range(first, end), alive, operations))
            if end < len(topic.partitions):
                next_cursor = latest.Cursor(topic_name=TopicName(name), partition_index=i32(end))
                break
            limit -= max(end - first, 0)
        return latest.DescribeTopicPartitionsResponse(
            throttle_time=NO_THROTTLE, topics=tuple(topics), next_cursor=next_cursor
        )


def _topic(
    topic: TopicImage, partition_ids: range, alive: set[int], operations: i32
) -> latest.DescribeTopicPartitionsResponseTopic:
    return latest.DescribeTopicPartitionsResponseTopic(
        error_code=ErrorCode.none,
        name=TopicName(topic.name),
        topic_id=topic.topic_id,
        is_internal=is_internal(topic.name),
        partitions=tuple(
            _partition(index, topic.partitions[index], alive)
            for index in partition_ids
            if index in topic.partitions
        ),
        topic_authorized_operations=operations,
    )


def _ids(brokers: tuple[int, ...]) -> tuple[BrokerId, ...]:
    return tuple(BrokerId(b) for b in brokers)


def _partition(
    index: int, registration: PartitionRegistration, alive: set[int]
) -> latest.DescribeTopicPartitionsResponsePartition:
    return latest.DescribeTopicPartitionsResponsePartition(
        error_code=ErrorCode.none,
        partition_index=i32(index),
        leader_id=BrokerId(registration.leader if registration.leader in alive else -1),
        leader_epoch=i32(registration.leader_epoch),
        replica_nodes=_ids(registration.replicas),
        isr_nodes=_ids(registration.isr),
        eligible_leader_replicas=_ids(registration.eligible_leader_replicas),
        last_known_elr=_ids(registration.last_known_elr),
        offline_replicas=_ids(tuple(b for b in registration.replicas if b not in alive)),
    )


def _missing(
    name: str, code: ErrorCode | None = None
) -> latest.DescribeTopicPartitionsResponseTopic:
    if code is None:
        code = (
            ErrorCode.invalid_topic_exception
            if invalid_topic_reason(name) is not None
            else ErrorCode.unknown_topic_or_partition
        )
    return latest.DescribeTopicPartitionsResponseTopic(
        error_code=code,
        name=TopicName(name),
        topic_id=ZERO_UUID,
        is_internal=is_internal(name),
        partitions=(),
    )


def _invalid(
    request: newest.DescribeTopicPartitionsRequest, reason: str
) -> latest.DescribeTopicPartitionsResponse:
    """Kafka's ``getErrorResponse``: each named topic INVALID_REQUEST, without partitions."""
    log.info("DescribeTopicPartitions refused: %s", reason)
    return latest.DescribeTopicPartitionsResponse(
        throttle_time=NO_THROTTLE,
        topics=tuple(
            latest.DescribeTopicPartitionsResponseTopic(
                error_code=ErrorCode.invalid_request,
                name=topic.name,
                topic_id=ZERO_UUID,
                partitions=(),
            )
            for topic in request.topics
        ),
    )
