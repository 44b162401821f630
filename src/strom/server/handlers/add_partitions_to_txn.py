"""AddPartitionsToTxn (API key 24), v0 to v5: add partitions to a producer's transaction.

v0-3 (producers): one transaction; every partition gets the outcome. Partitions of topics that
do not exist answer UNKNOWN_TOPIC_OR_PARTITION and the others OPERATION_NOT_ATTEMPTED, as in
Kafka. v4+ (brokers, KIP-890) batch transactions and answer per transaction; ``verify_only``
asks whether the partitions are already in the transaction (INVALID_TXN_STATE when not)
without adding them. PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from kio.static.primitive import i32

from strom.common import ErrorCode, TopicPartition
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.security.acls import AclOperation, ResourceType
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import build, response_module
from strom.server.api.throttle import NO_THROTTLE
from strom.server.handlers._txns import TxnHandler, for_client

__all__ = ["AddPartitionsToTxnHandler"]

BATCHED_VERSION: Final = 4
FENCED_FROM: Final = 2


class AddPartitionsToTxnHandler(TxnHandler):
    api_key: Final = ApiKey.ADD_PARTITIONS_TO_TXN
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.ADD_PARTITIONS_TO_TXN]

    async def handle(self, context: RequestContext) -> Any:
        body: Any = context.body
        version = context.api_version
        schema = response_module(self.api_key, version)
        if version < BATCHED_VERSION:
            results = await self._one(
                context,
                str(body.v3_and_below_transactional_id),
                int(body.v3_and_below_producer_id),
                int(body.v3_and_below_producer_epoch),
                _partitions(body.v3_and_below_topics),
                verify_only=False,
                version=version,
            )
            return build(
                schema.AddPartitionsToTxnResponse,
                throttle_time=NO_THROTTLE,
                results_by_topic_v3_and_below=_topic_results(schema, results),
            )
        if not context.authorize(AclOperation.CLUSTER_ACTION):  # v4+: brokers only
            return build(
                schema.AddPartitionsToTxnResponse,
                throttle_time=NO_THROTTLE,
                error_code=ErrorCode.cluster_authorization_failed,
                results_by_transaction=(),
            )
        answers = []
        for txn in body.transactions:
            results = await self._one(
                context,
                str(txn.transactional_id),
                int(txn.producer_id),
                int(txn.producer_epoch),
                _partitions(txn.topics),
                verify_only=bool(txn.verify_only),
                version=version,
            )
            answers.append(
                build(
                    schema.AddPartitionsToTxnResult,
                    transactional_id=txn.transactional_id,
                    topic_results=_topic_results(schema, results),
                )
            )
        return build(
            schema.AddPartitionsToTxnResponse,
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.none,
            results_by_transaction=tuple(answers),
        )

    async def _one(
        self,
        context: RequestContext,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: list[TopicPartition],
        *,
        verify_only: bool,
        version: int,
    ) -> dict[TopicPartition, ErrorCode]:
        coordinator = self._coordinator
        denied = _denied(context, transactional_id, partitions)
        if denied:
            return denied
        if verify_only:
            return coordinator.verify_partitions(
                transactional_id,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                partitions=partitions,
            )
        topics = self._runtime.replica_manager.image.topics
        unknown = {tp for tp in partitions if topics.get_partition(tp) is None}
        if unknown:
            return {
                tp: ErrorCode.unknown_topic_or_partition
                if tp in unknown
                else ErrorCode.operation_not_attempted
                for tp in partitions
            }
        code: ErrorCode = await self._runtime.call(
            lambda reply: coordinator.add_partitions(
                transactional_id,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                partitions=partitions,
                now_ms=self._runtime.now_ms(),
                reply=reply,
            )
        )
        return dict.fromkeys(partitions, for_client(code, version, fenced_from=FENCED_FROM))


def _denied(
    context: RequestContext, transactional_id: str, partitions: list[TopicPartition]
) -> dict[TopicPartition, ErrorCode]:
    """Kafka's checks: WRITE on the transactional id (else every partition
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED) and on each topic (else TOPIC_AUTHORIZATION_FAILED,
    the others OPERATION_NOT_ATTEMPTED); empty when all is allowed."""
    if context.authorizer is None:
        return {}
    if not context.authorize(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id):
        return dict.fromkeys(partitions, ErrorCode.transactional_id_authorization_failed)
    topics = {tp.topic for tp in partitions}
    refused = {
        t for t in topics if not context.authorize(AclOperation.WRITE, ResourceType.TOPIC, t)
    }
    if not refused:
        return {}
    return {
        tp: ErrorCode.topic_authorization_failed
        if tp.topic in refused
        else ErrorCode.operation_not_attempted
        for tp in partitions
    }


def _partitions(topics: Iterable[Any]) -> list[TopicPartition]:
    return [
        TopicPartition(str(topic.name), int(partition))
        for topic in topics
        for partition in topic.partitions
    ]


def _topic_results(schema: Any, results: dict[TopicPartition, ErrorCode]) -> tuple[Any, ...]:
    by_topic: dict[str, list[Any]] = {}
    for tp, code in results.items():
        by_topic.setdefault(tp.topic, []).append(
            build(
                schema.AddPartitionsToTxnPartitionResult,
                partition_index=i32(tp.partition),
                partition_error_code=code,
            )
        )
    return tuple(
        build(schema.AddPartitionsToTxnTopicResult, name=name, results_by_partition=tuple(parts))
        for name, parts in by_topic.items()
    )
