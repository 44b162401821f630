"""ListOffsets (v1+): an offset per partition, by timestamp or by one of the special timestamps.

Special timestamps: -2 earliest (the log start offset), -1 latest (the high watermark for
read_uncommitted, the last stable offset for read_committed; the log end offset for a request
with a replica id other than -1), -3 the record with the largest timestamp (v7+, KIP-734), -4
the earliest local offset (v8+, KIP-405; the log start offset, nothing is tiered), -5 the
latest tiered offset (v9+, KIP-1005; -1, nothing is tiered). Any other timestamp finds the
first record whose timestamp is at or after it, below the high watermark; none: offset -1.

The leader epoch (v4+) is the partition's current one (strom keeps one leader epoch per
partition for now). A partition named twice in one request gets INVALID_REQUEST, as in Kafka.
"""

from __future__ import annotations

from typing import Any, Final, Protocol

from kio.static.primitive import i32, i64
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode, KafkaError, TopicPartition
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.security.acls import AclOperation, ResourceType
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import build, response_module
from strom.server.api.throttle import NO_THROTTLE
from strom.server.replica.replica_results import READ_UNCOMMITTED, OffsetAnswer

__all__ = ["ListOffsetsHandler"]

CONSUMER_REPLICA_ID: Final = -1


class OffsetLister(Protocol):
    """What ListOffsets needs of the replica manager."""

    def list_offset(
        self,
        tp: TopicPartition,
        *,
        timestamp: int,
        isolation_level: int | None,
        current_leader_epoch: int = -1,
    ) -> OffsetAnswer:
        """ListOffsets for one partition; raises KafkaError."""
        ...


class ListOffsetsHandler:
    """Answers ListOffsets from the replica manager."""

    api_key: Final = ApiKey.LIST_OFFSETS
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.LIST_OFFSETS]

    def __init__(self, *, replica_manager: OffsetLister) -> None:
        self._replica_manager = replica_manager

    async def handle(self, context: RequestContext) -> ResponsePayload:
        body: Any = context.body
        version = context.api_version
        schema = response_module(ApiKey.LIST_OFFSETS, version)
        isolation_level: int | None = None
        if int(body.replica_id) == CONSUMER_REPLICA_ID:
            isolation_level = int(getattr(body, "isolation_level", READ_UNCOMMITTED))
        counts: dict[TopicPartition, int] = {}
        for topic in body.topics:
            for partition in topic.partitions:
                tp = TopicPartition(str(topic.name), int(partition.partition_index))
                counts[tp] = counts.get(tp, 0) + 1
        topics = []
        for topic in body.topics:
            answers = []
            described = context.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, topic.name)
            for partition in topic.partitions:
                tp = TopicPartition(str(topic.name), int(partition.partition_index))
                error, offset, timestamp, epoch = ErrorCode.none, -1, -1, -1
                if not described:
                    error = ErrorCode.topic_authorization_failed
                elif counts[tp] > 1:
                    error = ErrorCode.invalid_request
                else:
                    try:
                        answer = self._replica_manager.list_offset(
                            tp,
                            timestamp=int(partition.timestamp),
                            isolation_level=isolation_level,
                            current_leader_epoch=int(
                                getattr(partition, "current_leader_epoch", -1)
                            ),
                        )
                    except KafkaError as failure:
                        error = failure.error_code
                    else:
                        offset, timestamp, epoch = (
                            answer.offset,
                            answer.timestamp,
                            answer.leader_epoch,
                        )
                answers.append(
                    build(
                        schema.ListOffsetsPartitionResponse,
                        partition_index=i32(tp.partition),
                        error_code=error,
                        timestamp=i64(timestamp),
                        offset=i64(offset),
                        leader_epoch=i32(epoch),
                    )
                )
            topics.append(
                build(schema.ListOffsetsTopicResponse, name=topic.name, partitions=tuple(answers))
            )
        response: ResponsePayload = build(
            schema.ListOffsetsResponse, throttle_time=NO_THROTTLE, topics=tuple(topics)
        )
        return response
