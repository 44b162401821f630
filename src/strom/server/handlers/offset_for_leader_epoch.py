"""OffsetForLeaderEpoch (v2+): where a leader epoch ends, for truncation checks.

Consumers send it after a leader change or before resuming from a committed offset with its
leader epoch (KIP-320), followers to find where to truncate. The answer comes from the log's
leader epoch cache (``strom.storage.leader_epoch_cache``): the largest epoch at most the one
asked for and where it ended (the log end offset for the current epoch); a newer or undefined
one is UNDEFINED (-1, -1) with no error, as Kafka's ``LeaderEpochFileCache.endOffsetFor``
answers. ``current_leader_epoch`` is checked
first: FENCED_LEADER_EPOCH when older than the partition's, UNKNOWN_LEADER_EPOCH when newer.
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

__all__ = ["OffsetForLeaderEpochHandler"]


class EpochEndOffsets(Protocol):
    """What OffsetForLeaderEpoch needs of the replica manager."""

    def end_offset_for_epoch(
        self, tp: TopicPartition, *, leader_epoch: int, current_leader_epoch: int = -1
    ) -> tuple[int, int]:
        """(epoch, end offset) of ``leader_epoch``; raises KafkaError."""
        ...


class OffsetForLeaderEpochHandler:
    """Answers OffsetForLeaderEpoch from the replica manager."""

    api_key: Final = ApiKey.OFFSET_FOR_LEADER_EPOCH
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.OFFSET_FOR_LEADER_EPOCH]

    def __init__(self, *, replica_manager: EpochEndOffsets) -> None:
        self._replica_manager = replica_manager

    async def handle(self, context: RequestContext) -> ResponsePayload:
        body: Any = context.body
        schema = response_module(ApiKey.OFFSET_FOR_LEADER_EPOCH, context.api_version)
        topics = []
        follower = int(getattr(body, "replica_id", -1)) >= 0
        for topic in body.topics:
            results = []
            refusal = _refusal(context, str(topic.topic), follower=follower)
            for partition in topic.partitions:
                tp = TopicPartition(str(topic.topic), int(partition.partition))
                error, epoch, end_offset = ErrorCode.none, -1, -1
                if refusal is not None:
                    error = refusal
                else:
                    try:
                        epoch, end_offset = self._replica_manager.end_offset_for_epoch(
                            tp,
                            leader_epoch=int(partition.leader_epoch),
                            current_leader_epoch=int(partition.current_leader_epoch),
                        )
                    except KafkaError as failure:
                        error = failure.error_code
                results.append(
                    build(
                        schema.EpochEndOffset,
                        error_code=error,
                        partition=i32(tp.partition),
                        leader_epoch=i32(epoch),
                        end_offset=i64(end_offset),
                    )
                )
            topics.append(
                build(
                    schema.OffsetForLeaderTopicResult, topic=topic.topic, partitions=tuple(results)
                )
            )
        response: ResponsePayload = build(
            schema.OffsetForLeaderEpochResponse, throttle_time=NO_THROTTLE, topics=tuple(topics)
        )
        return response


def _refusal(context: RequestContext, topic: str, *, follower: bool) -> ErrorCode | None:
    """Kafka's check: CLUSTER_ACTION for a follower, DESCRIBE on the topic for a client."""
    if follower:
        allowed = context.authorize(AclOperation.CLUSTER_ACTION)
        return None if allowed else ErrorCode.cluster_authorization_failed
    allowed = context.authorize(AclOperation.DESCRIBE, ResourceType.TOPIC, topic)
    return None if allowed else ErrorCode.topic_authorization_failed
