"""WriteTxnMarkers (API key 27), v1: a transaction coordinator's COMMIT/ABORT markers.

Each marker names a producer id and epoch, the transaction's result, the coordinator epoch
and the partitions to end the transaction in; each partition gets one control batch through
:meth:`ReplicaManager.write_txn_marker` and its own error code (Kafka's
``KafkaApis.handleWriteTxnMarkersRequest``): UNKNOWN_TOPIC_OR_PARTITION,
NOT_LEADER_OR_FOLLOWER, INVALID_PRODUCER_EPOCH for an older producer epoch,
TRANSACTION_COORDINATOR_FENCED for an older coordinator epoch than the producer's last marker's.
A failed partition changes nothing; the others are written. Markers go to internal topics too
(``__consumer_offsets`` for transactional offset commits). Brokers send it to each other; the
local transaction coordinator calls the replica manager directly.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from kio.static.primitive import i32
from kio.static.protocol import ResponsePayload

from strom.common import TopicPartition
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.server.handlers._schema import build, response_module
from strom.server.handlers.registry import RequestContext
from strom.server.replica_manager import ReplicaManager

__all__ = ["WriteTxnMarkersHandler"]

log = logging.getLogger(__name__)


class WriteTxnMarkersHandler:
    """Answers WriteTxnMarkers through the replica manager."""

    api_key: Final = ApiKey.WRITE_TXN_MARKERS
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.WRITE_TXN_MARKERS]

    def __init__(self, *, replica_manager: ReplicaManager) -> None:
        self._replica_manager = replica_manager

    async def handle(self, context: RequestContext) -> ResponsePayload:
        body: Any = context.body
        schema = response_module(ApiKey.WRITE_TXN_MARKERS, context.api_version)
        results = []
        for marker in body.markers:
            producer_id = int(marker.producer_id)
            topics = []
            for topic in marker.topics:
                partitions = []
                for index in topic.partition_indexes:
                    error = self._replica_manager.write_txn_marker(
                        TopicPartition(str(topic.name), int(index)),
                        producer_id=producer_id,
                        producer_epoch=int(marker.producer_epoch),
                        commit=bool(marker.transaction_result),
                        coordinator_epoch=int(marker.coordinator_epoch),
                    )
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
