"""DeleteRecords: move partitions' log start offsets up (``AdminClient.delete_records``).

Each partition's records below the requested offset become unreadable and the segments wholly
below it are deleted; ``-1`` means the high watermark. An offset past the high watermark (or
negative) is OFFSET_OUT_OF_RANGE; a topic whose cleanup.policy lacks ``delete`` is
POLICY_VIOLATION. The answer is the new low watermark (log start offset). Kafka waits for the
followers' log start offsets too (``DelayedDeleteRecords``); a single node has none, so it
answers at once. The log start offset checkpoint is written right away, so a crash does not
bring deleted records back.
"""

from __future__ import annotations

import logging
from typing import Any, Final, Protocol

from kio.static.primitive import i32, i64
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode, KafkaError, TopicPartition
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.security.acls import AclOperation, ResourceType
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import build, response_module
from strom.server.api.throttle import NO_THROTTLE

__all__ = ["DeleteRecordsHandler"]

log = logging.getLogger(__name__)


class RecordsDeleter(Protocol):
    """What DeleteRecords needs of the replica manager."""

    def delete_records(self, tp: TopicPartition, offset: int) -> int:
        """Move the log start offset to ``offset`` (-1: the high watermark); the new low
        watermark. Raises KafkaError."""
        ...


class DeleteRecordsHandler:
    """Answers DeleteRecords through the replica manager."""

    api_key: Final = ApiKey.DELETE_RECORDS
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.DELETE_RECORDS]

    def __init__(self, *, replica_manager: RecordsDeleter) -> None:
        self._replica_manager = replica_manager

    async def handle(self, context: RequestContext) -> ResponsePayload:
        body: Any = context.body
        schema = response_module(ApiKey.DELETE_RECORDS, context.api_version)
        topics = []
        for topic in body.topics:
            results = []
            allowed = context.authorize(AclOperation.DELETE, ResourceType.TOPIC, topic.name)
            for partition in topic.partitions:
                tp = TopicPartition(str(topic.name), int(partition.partition_index))
                offset = int(partition.offset)
                error, low_watermark = ErrorCode.none, -1
                if not allowed:
                    error = ErrorCode.topic_authorization_failed
                    results.append(_result(schema, tp, low_watermark, error))
                    continue
                try:
                    low_watermark = self._replica_manager.delete_records(tp, offset)
                except KafkaError as failure:
                    error = failure.error_code
                    log.info(
                        "delete records of %s before %d for %s (client id %r): %s: %s",
                        tp,
                        offset,
                        context.client_address,
                        context.header.client_id,
                        error.name.upper(),
                        failure.message,
                    )
                else:
                    log.info(
                        "deleted records of %s before %d for %s (client id %r): "
                        "log start offset now %d",
                        tp,
                        offset,
                        context.client_address,
                        context.header.client_id,
                        low_watermark,
                    )
                results.append(_result(schema, tp, low_watermark, error))
            topics.append(
                build(schema.DeleteRecordsTopicResult, name=topic.name, partitions=tuple(results))
            )
        response: ResponsePayload = build(
            schema.DeleteRecordsResponse, throttle_time=NO_THROTTLE, topics=tuple(topics)
        )
        return response


def _result(schema: Any, tp: TopicPartition, low_watermark: int, error: ErrorCode) -> Any:
    return build(
        schema.DeleteRecordsPartitionResult,
        partition_index=i32(tp.partition),
        low_watermark=i64(low_watermark),
        error_code=error,
    )
