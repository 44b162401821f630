"""EndTxn (API key 26), v0 to v5: commit or abort the producer's transaction.

Answered once the coordinator has written PrepareCommit/PrepareAbort to
``__transaction_state``; the markers and the Complete record follow (``coordinator/txn``).
v5's producer id and epoch are the current ones (strom does not bump the epoch at every end,
transaction version 2). PRODUCER_FENCED is INVALID_PRODUCER_EPOCH before v2.
"""

from __future__ import annotations

from typing import Final

from kio.schema.end_txn.v5 import request as newest
from kio.schema.end_txn.v5 import response as latest
from kio.schema.types import ProducerId
from kio.static.primitive import i16
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.security.acls import AclOperation, ResourceType
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import as_newest, for_version
from strom.server.api.throttle import NO_THROTTLE
from strom.server.handlers._txns import TxnHandler, for_client

__all__ = ["EndTxnHandler"]


class EndTxnHandler(TxnHandler):
    api_key: Final = ApiKey.END_TXN
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.END_TXN]

    async def handle(self, context: RequestContext) -> ResponsePayload:
        request = as_newest(context.body, newest.EndTxnRequest)
        coordinator = self._coordinator
        code: ErrorCode = ErrorCode.transactional_id_authorization_failed
        if context.authorize(
            AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id
        ):
            code = await self._runtime.call(
                lambda reply: coordinator.end_txn(
                    str(request.transactional_id),
                    producer_id=int(request.producer_id),
                    producer_epoch=int(request.producer_epoch),
                    commit=bool(request.committed),
                    now_ms=self._runtime.now_ms(),
                    reply=reply,
                )
            )
        ok = code is ErrorCode.none
        response = latest.EndTxnResponse(
            throttle_time=NO_THROTTLE,
            error_code=for_client(code, context.api_version, fenced_from=2),
            producer_id=ProducerId(int(request.producer_id) if ok else -1),
            producer_epoch=i16(int(request.producer_epoch) if ok else -1),
        )
        return for_version(response, context.api_version)
