"""AddOffsetsToTxn (API key 25), v0 to v4: make a group's offsets part of a transaction.

The coordinator adds the group's ``__consumer_offsets`` partition (Kafka's
``abs(hashCode(group.id)) % partitions``) to the transaction like any AddPartitionsToTxn, so
that EndTxn writes its marker there too; the offsets themselves come with TxnOffsetCommit,
sent to the group coordinator. PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2.
"""

from __future__ import annotations

from typing import Final

from kio.schema.add_offsets_to_txn.v4 import request as newest
from kio.schema.add_offsets_to_txn.v4 import response as latest
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode, TopicPartition
from strom.controller.topic_names import GROUP_METADATA_TOPIC
from strom.coordinator.group import partition_for
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.security.acls import AclOperation, ResourceType
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import as_newest, for_version
from strom.server.api.throttle import NO_THROTTLE
from strom.server.coordinator.txn_coordinator_runtime import TxnCoordinatorRuntime
from strom.server.handlers._txns import TxnHandler, for_client

__all__ = ["AddOffsetsToTxnHandler"]


class AddOffsetsToTxnHandler(TxnHandler):
    api_key: Final = ApiKey.ADD_OFFSETS_TO_TXN
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.ADD_OFFSETS_TO_TXN]

    def __init__(self, runtime: TxnCoordinatorRuntime, *, offsets_partitions: int) -> None:
        """``offsets_partitions``: the partitions of ``__consumer_offsets``."""
        super().__init__(runtime)
        self._offsets_partitions = offsets_partitions

    async def handle(self, context: RequestContext) -> ResponsePayload:
        request = as_newest(context.body, newest.AddOffsetsToTxnRequest)
        group_id = str(request.group_id)
        if not group_id:
            return _response(ErrorCode.invalid_group_id, context.api_version)
        if not context.authorize(
            AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id
        ):
            return _response(ErrorCode.transactional_id_authorization_failed, context.api_version)
        if not context.authorize(AclOperation.READ, ResourceType.GROUP, group_id):
            return _response(ErrorCode.group_authorization_failed, context.api_version)
        tp = TopicPartition(GROUP_METADATA_TOPIC, partition_for(group_id, self._offsets_partitions))
        coordinator = self._coordinator
        code: ErrorCode = await self._runtime.call(
            lambda reply: coordinator.add_partitions(
                str(request.transactional_id),
                producer_id=int(request.producer_id),
                producer_epoch=int(request.producer_epoch),
                partitions=[tp],
                now_ms=self._runtime.now_ms(),
                reply=reply,
            )
        )
        return _response(for_client(code, context.api_version, fenced_from=2), context.api_version)


def _response(code: ErrorCode, version: int) -> ResponsePayload:
    return for_version(
        latest.AddOffsetsToTxnResponse(throttle_time=NO_THROTTLE, error_code=code), version
    )
