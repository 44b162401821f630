"""TxnOffsetCommit (API key 28), v0 to v5: a transactional producer commits a group's offsets
inside its transaction (``send_offsets_to_transaction``); they become the group's committed
offsets when the transaction commits and are dropped when it aborts.

v3+ carry the consumer's generation, member id and group instance id, checked as OffsetCommit
checks them (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID); a request without a
member (every one before v3) is accepted in any group state, as in Kafka. When this broker
coordinates the producer's transactional id, the group's ``__consumer_offsets`` partition must
be in the ongoing transaction (added by AddOffsetsToTxn; KIP-890 verification), else that
check's error (INVALID_TXN_STATE, INVALID_PRODUCER_EPOCH, ...). Errors are per partition.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Final, TypeAlias

from kio.schema.txn_offset_commit.v5 import request as newest
from kio.schema.txn_offset_commit.v5 import response as txn_commit
from kio.schema.types import TopicName
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode, TopicPartition
from strom.controller.topic_names import GROUP_METADATA_TOPIC
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import for_version
from strom.server.coordinator.group_coordinator_runtime import GroupCoordinatorRuntime
from strom.server.handlers._groups import GroupHandler, newest_request, split_commit

__all__ = ["TxnOffsetCommitHandler", "TxnVerifier"]

TxnVerifier: TypeAlias = Callable[[str, int, int, TopicPartition], ErrorCode | None]
"""``verify(transactional_id, producer_id, producer_epoch, tp)``: NONE when ``tp`` is in the
producer's ongoing transaction, its error otherwise, None when this broker does not coordinate
transactions."""


class TxnOffsetCommitHandler(GroupHandler):
    api_key: Final = ApiKey.TXN_OFFSET_COMMIT
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.TXN_OFFSET_COMMIT]

    def __init__(self, runtime: GroupCoordinatorRuntime, *, verify: TxnVerifier | None) -> None:
        super().__init__(runtime)
        self._verify = verify

    async def handle(self, context: RequestContext) -> ResponsePayload:
        request = newest_request(context, newest.TxnOffsetCommitRequest)
        allowed, denied = split_commit(
            context, request.group_id, request.topics, transactional_id=request.transactional_id
        )
        request = dataclasses.replace(request, topics=allowed)
        response: txn_commit.TxnOffsetCommitResponse = await self._runtime.call(
            lambda reply: self._coordinator.txn_offset_commit(
                request,
                now_ms=self._runtime.now_ms(),
                reply=reply,
                verify=None if self._verify is None else _in_transaction(request, self._verify),
            )
        )
        if denied:
            refused = tuple(
                txn_commit.TxnOffsetCommitResponseTopic(
                    name=TopicName(name),
                    partitions=tuple(
                        txn_commit.TxnOffsetCommitResponsePartition(
                            partition_index=index, error_code=code
                        )
                        for index in indexes
                    ),
                )
                for name, indexes, code in denied
            )
            response = dataclasses.replace(response, topics=(*response.topics, *refused))
        return for_version(response, context.api_version)


def _in_transaction(
    request: newest.TxnOffsetCommitRequest, verify: TxnVerifier
) -> Callable[[int], ErrorCode]:
    """The core's check of the group's partition, through ``verify``."""

    def check(partition: int) -> ErrorCode:
        code = verify(
            str(request.transactional_id),
            int(request.producer_id),
            int(request.producer_epoch),
            TopicPartition(GROUP_METADATA_TOPIC, partition),
        )
        return ErrorCode.none if code is None else code

    return check
