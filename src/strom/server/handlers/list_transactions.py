"""ListTransactions (API key 66), v0 to v1 (KIP-664): the transactional ids this coordinator
knows, filtered by state names (unknown names come back in ``unknown_state_filters``), by
producer ids, and from v1 by how long the transaction has been running."""

from __future__ import annotations

from typing import Final

from kio.schema.list_transactions.v1 import request as newest
from kio.schema.list_transactions.v1 import response as latest
from kio.schema.types import ProducerId, TransactionalId
from kio.static.protocol import ResponsePayload

from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.security.acls import AclOperation, ResourceType
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import as_newest, for_version, request_field
from strom.server.api.throttle import NO_THROTTLE
from strom.server.handlers._txns import TxnHandler

__all__ = ["ListTransactionsHandler"]


class ListTransactionsHandler(TxnHandler):
    api_key: Final = ApiKey.LIST_TRANSACTIONS
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.LIST_TRANSACTIONS]

    async def handle(self, context: RequestContext) -> ResponsePayload:
        request = as_newest(context.body, newest.ListTransactionsRequest)
        error, unknown, found = self._coordinator.list_transactions(
            states=[str(state) for state in request.state_filters],
            producer_ids={int(pid) for pid in request.producer_id_filters},
            duration_ms=int(request_field(request, "duration_filter", -1)),
            now_ms=self._runtime.now_ms(),
        )
        response = latest.ListTransactionsResponse(
            throttle_time=NO_THROTTLE,
            error_code=error,
            unknown_state_filters=tuple(unknown),
            transaction_states=tuple(
                latest.TransactionState(
                    transactional_id=TransactionalId(metadata.transactional_id),
                    producer_id=ProducerId(metadata.producer_id),
                    transaction_state=metadata.state.value,
                )
                for metadata in found
                if context.authorize(
                    AclOperation.DESCRIBE,
                    ResourceType.TRANSACTIONAL_ID,
                    metadata.transactional_id,
                    audit=False,
                )
            ),
        )
        return for_version(response, context.api_version)
