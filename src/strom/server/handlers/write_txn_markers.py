"""WriteTxnMarkers (API key 27), v1: a transaction coordinator's COMMIT/ABORT markers.

Each marker names a producer id and epoch, the transaction's result, the coordinator epoch
and the partitions to end the transaction in; each partition gets one control batch through
:meth:`ReplicaManager.write_txn_marker` and its own error code (Kafka's
``KafkaApis.handleWriteTxnMarkersRequest``): UNKNOWN_TOPIC_OR_PARTITION,
NOT_LEADER_OR_FOLLOWER, INVALID_PRODUCER_EPOCH for an older producer epoch,
TRANSACTION_COORDINATOR_FENCED for an older coordinator epoch than the producer's last marker's.
A failed partition changes nothing; the others are written. As Kafka's, the answer waits until
every in-sync replica has the markers (acks=all, ``ReplicaManager.wait_for_acks``, at most
``timeout_ms``: REQUEST_TIMED_OUT, which the coordinator retries), so that a marker the
coordinator counts as written survives a leader change. Markers go to internal topics too
(``__consumer_offsets`` for transactional offset commits). Brokers send it to each other; the
local transaction coordinator calls the replica manager directly.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Final, Protocol

from kio.static.primitive import i32
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode, TopicPartition
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import build, response_module

__all__ = ["WriteTxnMarkersHandler"]

log = logging.getLogger(__name__)


class MarkerWriter(Protocol):
    """What WriteTxnMarkers needs of the replica manager."""

    def write_txn_marker(
        self,
        tp: TopicPartition,
        *,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
    ) -> ErrorCode:
        """Append the COMMIT/ABORT marker of ``producer_id`` to ``tp``."""
        ...

    def log_end_offset(self, tp: TopicPartition) -> int:
        """The log end offset of a partition led here; raises KafkaError."""
        ...

    async def wait_for_acks(
        self, required_offsets: Mapping[TopicPartition, int], *, timeout_ms: int
    ) -> dict[TopicPartition, ErrorCode]:
        """Each partition's acks=all outcome once its high watermark reaches its offset."""
        ...


class WriteTxnMarkersHandler:
    """Answers WriteTxnMarkers through the replica manager."""

    api_key: Final = ApiKey.WRITE_TXN_MARKERS
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.WRITE_TXN_MARKERS]

    def __init__(self, *, replica_manager: MarkerWriter, timeout_ms: int = 30_000) -> None:
        """``timeout_ms``: how long the answer waits for the in-sync replicas."""
        self._replica_manager = replica_manager
        self._timeout_ms = timeout_ms

    async def handle(self, context: RequestContext) -> ResponsePayload:
        body: Any = context.body
        schema = response_module(ApiKey.WRITE_TXN_MARKERS, context.api_version)
        manager = self._replica_manager
        errors: list[ErrorCode] = []
        required: dict[TopicPartition, int] = {}
        for marker in body.markers:
            for topic in marker.topics:
                for index in topic.partition_indexes:
                    tp = TopicPartition(str(topic.name), int(index))
                    error = manager.write_txn_marker(
                        tp,
                        producer_id=int(marker.producer_id),
                        producer_epoch=int(marker.producer_epoch),
                        commit=bool(marker.transaction_result),
                        coordinator_epoch=int(marker.coordinator_epoch),
                    )
                    if error is ErrorCode.none:
                        required[tp] = manager.log_end_offset(tp)
                    errors.append(error)
        acks: dict[TopicPartition, ErrorCode] = {}
        if required:
            acks = await manager.wait_for_acks(required, timeout_ms=self._timeout_ms)
        outcomes = iter(errors)
        results = []
        for marker in body.markers:
            producer_id = int(marker.producer_id)
            topics = []
            for topic in marker.topics:
                partitions = []
                for index in topic.partition_indexes:
                    error = next(outcomes)
                    if error is ErrorCode.none:
                        error = acks.get(TopicPartition(str(topic.name), int(index)), error)
                    partitions.append(
                        build(
                            schema.WritableTxnMarkerPartitionResult,
                            partition_index=i32(int(index)),
                            error_code=error,
                        )
                    )
                topics.append(
                    build(
                        schema.WritableTxnMarkerTopicResult,
                        name=topic.name,
                        partitions=tuple(partitions),
                    )
                )
            log.debug(
                "%s markers for producer %d from %s",
                "COMMIT" if marker.transaction_result else "ABORT",
                producer_id,
                context.client_address,
            )
            results.append(
                build(
                    schema.WritableTxnMarkerResult,
                    producer_id=marker.producer_id,
                    topics=tuple(topics),
                )
            )
        response: ResponsePayload = build(schema.WriteTxnMarkersResponse, markers=tuple(results))
        return response
