"""DescribeProducers (API key 61), v0 (KIP-664): the active producers of partitions this broker
leads, from each log's producer state, as Kafka's ``ReplicaManager.activeProducerState``.

Each producer: its id and epoch, last sequence, last timestamp, the coordinator epoch of its
last marker and the first offset of its open transaction (-1: none). That is what
``kafka-transactions.sh describe-producers``, ``find-hanging`` and ``abort --start-offset``
read. A topic the principal may not READ is TOPIC_AUTHORIZATION_FAILED; a partition this broker
does not lead is NOT_LEADER_OR_FOLLOWER (Kafka also answers from a follower's replica).
"""

from __future__ import annotations

from typing import Final, Protocol

from kio.schema.describe_producers.v0 import request as newest
from kio.schema.describe_producers.v0 import response as latest
from kio.schema.types import ProducerId
from kio.static.primitive import i32, i64
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode, KafkaError, TopicPartition
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.security.acls import AclOperation, ResourceType
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import as_newest
from strom.server.api.throttle import NO_THROTTLE
from strom.server.replica.partition import Partition

__all__ = ["DescribeProducersHandler"]


class LedPartitions(Protocol):
    """What DescribeProducers needs of the replica manager."""

    def partition(self, tp: TopicPartition, *, current_leader_epoch: int = -1) -> Partition:
        """The partition, led by this broker; raises KafkaError."""
        ...


class DescribeProducersHandler:
    api_key: Final = ApiKey.DESCRIBE_PRODUCERS
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.DESCRIBE_PRODUCERS]

    def __init__(self, *, replica_manager: LedPartitions) -> None:
        self._replica_manager = replica_manager

    async def handle(self, context: RequestContext) -> ResponsePayload:
        request = as_newest(context.body, newest.DescribeProducersRequest)
        topics = []
        for topic in request.topics:
            allowed = context.authorize(AclOperation.READ, ResourceType.TOPIC, topic.name)
            partitions = tuple(
                self._partition(TopicPartition(str(topic.name), int(index)))
                if allowed
                else _failed(int(index), ErrorCode.topic_authorization_failed, None)
                for index in topic.partition_indexes
            )
            topics.append(latest.TopicResponse(name=topic.name, partitions=partitions))
        return latest.DescribeProducersResponse(throttle_time=NO_THROTTLE, topics=tuple(topics))

    def _partition(self, tp: TopicPartition) -> latest.PartitionResponse:
        try:
            partition = self._replica_manager.partition(tp)
        except KafkaError as error:
            return _failed(tp.partition, error.error_code, error.message)
        producers = partition.log.producer_state.producers
        return latest.PartitionResponse(
            partition_index=i32(tp.partition),
            error_code=ErrorCode.none,
            active_producers=tuple(
                latest.ProducerState(
                    producer_id=ProducerId(producer_id),
                    producer_epoch=i32(entry.producer_epoch),
                    last_sequence=i32(entry.last_sequence),
                    last_timestamp=i64(entry.last_timestamp),
                    coordinator_epoch=i32(entry.coordinator_epoch),
                    current_txn_start_offset=i64(
                        -1
                        if entry.current_txn_first_offset is None
                        else entry.current_txn_first_offset
                    ),
                )
                for producer_id, entry in sorted(producers.items())
            ),
        )


def _failed(index: int, code: ErrorCode, message: str | None) -> latest.PartitionResponse:
    return latest.PartitionResponse(
        partition_index=i32(index), error_code=code, error_message=message, active_producers=()
    )
