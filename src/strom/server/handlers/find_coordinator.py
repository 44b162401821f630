"""FindCoordinator (API key 10), v0 to v6: which broker coordinates a group (key type 0) or a
transactional id (key type 1).

A key's coordinator is the broker that leads its partition of ``__consumer_offsets`` (groups)
or ``__transaction_state`` (transactional ids), answered with its address on the listener the
request came in on; the first request for a key of either type creates that topic. v4+ asks
for many keys at once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final

from kio.schema.find_coordinator.v6 import request as newest
from kio.schema.find_coordinator.v6 import response as latest
from kio.schema.types import BrokerId
from kio.static.primitive import i32
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode, TopicPartition
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.security.acls import AclOperation, ResourceType
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import as_newest, for_version, request_field
from strom.server.api.throttle import NO_THROTTLE
from strom.server.coordinator.group_coordinator_runtime import GroupCoordinatorRuntime
from strom.server.coordinator.txn_coordinator_runtime import TxnCoordinatorRuntime
from strom.server.handlers._groups import GroupHandler
from strom.server.handlers.common import BrokerAddress

__all__ = ["FindCoordinatorHandler"]

log = logging.getLogger(__name__)

GROUP_KEY: Final = 0
TRANSACTION_KEY: Final = 1
BATCHED_VERSION: Final = 4


class FindCoordinatorHandler(GroupHandler):
    api_key: Final = ApiKey.FIND_COORDINATOR
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.FIND_COORDINATOR]

    def __init__(
        self,
        runtime: GroupCoordinatorRuntime,
        leader_address: Callable[[TopicPartition, str], BrokerAddress | None],
        transactions: TxnCoordinatorRuntime,
    ) -> None:
        """``leader_address(partition, listener_name)``: the partition's leader as clients
        reach it on that listener (None while it has none)."""
        super().__init__(runtime)
        self._leader_address = leader_address
        self._transactions = transactions

    async def handle(self, context: RequestContext) -> ResponsePayload:
        request = as_newest(context.body, newest.FindCoordinatorRequest)
        key_type = int(request_field(context.body, "key_type", 0))
        if context.api_version >= BATCHED_VERSION:
            keys = tuple(request.coordinator_keys)
        else:
            keys = (str(request_field(context.body, "key", "")),)
        coordinators = [await self._find(context, key, key_type) for key in keys]
        if context.api_version >= BATCHED_VERSION:
            response = latest.FindCoordinatorResponse(
                throttle_time=NO_THROTTLE, coordinators=tuple(coordinators)
            )
            return for_version(response, context.api_version)
        one = coordinators[0]
        return for_version(
            latest.FindCoordinatorResponse(throttle_time=NO_THROTTLE, coordinators=()),
            context.api_version,
            extra={
                "error_code": one.error_code,
                "error_message": one.error_message,
                "node_id": one.node_id,
                "host": one.host,
                "port": one.port,
            },
        )

    async def _find(self, context: RequestContext, key: str, key_type: int) -> latest.Coordinator:
        if key_type == TRANSACTION_KEY:
            if not key:
                return _coordinator(key, ErrorCode.invalid_request, None, "empty transactional id")
            if not context.authorize(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key):
                return _coordinator(key, ErrorCode.transactional_id_authorization_failed, None)
            error = await self._transactions.ensure_topic()
            topic = self._transactions.topic
            partition: Callable[[str], int] = self._transactions.coordinator.partition_of
        elif key_type == GROUP_KEY:
            if not key:
                return _coordinator(key, ErrorCode.invalid_request, None, "empty group id")
            if not context.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, key):
                return _coordinator(key, ErrorCode.group_authorization_failed, None)
            error = await self._runtime.ensure_topic()
            topic, partition = self._runtime.topic, self._coordinator.partition_of
        else:
            return _coordinator(
                key, ErrorCode.invalid_request, None, f"unknown key type {key_type}"
            )
        if error is not ErrorCode.none:
            return _coordinator(key, error, None)
        address = self._leader_address(TopicPartition(topic, partition(key)), context.listener_name)
        if address is None:
            return _coordinator(key, ErrorCode.coordinator_not_available, None)
        return _coordinator(key, ErrorCode.none, address)


def _coordinator(
    key: str, error: ErrorCode, address: BrokerAddress | None, message: str | None = None
) -> latest.Coordinator:
    found = error is ErrorCode.none and address is not None
    return latest.Coordinator(
        key=key,
        node_id=BrokerId(address.node_id if found and address else -1),
        host=address.host if found and address else "",
        port=i32(address.port if found and address else -1),
        error_code=error,
        error_message=message if message is not None or found else error.name.upper(),
    )
