"""DescribeTransactions (API key 65), v0 (KIP-664): the state of transactional ids.

An id this coordinator does not know answers TRANSACTIONAL_ID_NOT_FOUND; one whose
``__transaction_state`` partition is loading COORDINATOR_LOAD_IN_PROGRESS, and any before that
topic exists NOT_COORDINATOR.
"""

from __future__ import annotations

import dataclasses
from typing import Final

from kio.schema.describe_transactions.v0 import request as newest
from kio.schema.describe_transactions.v0 import response as latest
from kio.schema.types import ProducerId, TopicName, TransactionalId
from kio.static.primitive import i16, i32
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode
from strom.coordinator.txn import TransactionMetadata
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.security.acls import AclOperation, ResourceType
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import as_newest, for_version
from strom.server.api.throttle import NO_THROTTLE
from strom.server.handlers._txns import TxnHandler, timeout, timestamp

__all__ = ["DescribeTransactionsHandler"]


class DescribeTransactionsHandler(TxnHandler):
    api_key: Final = ApiKey.DESCRIBE_TRANSACTIONS
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.DESCRIBE_TRANSACTIONS]

    async def handle(self, context: RequestContext) -> ResponsePayload:
        request = as_newest(context.body, newest.DescribeTransactionsRequest)
        states = []
        for transactional_id in request.transactional_ids:
            if not context.authorize(
                AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, transactional_id
            ):
                code = ErrorCode.transactional_id_authorization_failed
                states.append(_state(transactional_id, code, None))
                continue
            code, metadata = self._coordinator.describe(str(transactional_id))
            state = _state(transactional_id, code, metadata)
            if context.authorizer is not None:  # Kafka leaves out topics it may not describe
                topics = tuple(
                    t
                    for t in state.topics
                    if context.authorize(
                        AclOperation.DESCRIBE, ResourceType.TOPIC, t.topic, audit=False
                    )
                )
                state = dataclasses.replace(state, topics=topics)
            states.append(state)
        response = latest.DescribeTransactionsResponse(
            throttle_time=NO_THROTTLE, transaction_states=tuple(states)
        )
        return for_version(response, context.api_version)


def _state(
    transactional_id: TransactionalId, code: ErrorCode, metadata: TransactionMetadata | None
) -> latest.TransactionState:
    if metadata is None:
        return latest.TransactionState(
            error_code=code,
            transactional_id=transactional_id,
            transaction_state="",
            transaction_timeout=timeout(0),
            transaction_start_time=timestamp(-1),
            producer_id=ProducerId(-1),
            producer_epoch=i16(-1),
            topics=(),
        )
    by_topic: dict[str, list[i32]] = {}
    for tp in sorted(metadata.partitions):
        by_topic.setdefault(tp.topic, []).append(i32(tp.partition))
    return latest.TransactionState(
        error_code=ErrorCode.none,
        transactional_id=transactional_id,
        transaction_state=metadata.state.value,
        transaction_timeout=timeout(metadata.timeout_ms),
        transaction_start_time=timestamp(metadata.start_timestamp_ms),
        producer_id=ProducerId(metadata.producer_id),
        producer_epoch=i16(metadata.producer_epoch),
        topics=tuple(
            latest.TopicData(topic=TopicName(topic), partitions=tuple(partitions))
            for topic, partitions in by_topic.items()
        ),
    )
