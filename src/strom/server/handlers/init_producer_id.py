"""InitProducerId (API key 22), v0 to v5: a producer id and epoch for an idempotent producer.

Without a transactional id, Kafka's ``TransactionCoordinator.handleInitProducerId`` always hands
out a new producer id at epoch 0, whatever producer id and epoch the request carries (v3+ may
carry the current ones to bump the epoch; that matters only for transactional producers).

Transactions come with the transaction coordinator (a later issue). Until then a request with a
transactional id is answered COORDINATOR_NOT_AVAILABLE, as while a coordinator is loading;
clients only send it after FindCoordinator for the transactional id, which this broker does not
serve yet. An empty transactional id is INVALID_REQUEST, as in Kafka.
"""

from __future__ import annotations

import logging
from typing import Final

from kio.schema.init_producer_id.v5 import request as newest
from kio.schema.init_producer_id.v5 import response as latest
from kio.schema.types import ProducerId
from kio.static.primitive import i16
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.server.handlers._schema import for_version
from strom.server.handlers.common import NO_THROTTLE, as_newest
from strom.server.handlers.registry import RequestContext
from strom.server.producer_ids import ProducerIdManager

__all__ = ["InitProducerIdHandler"]

log = logging.getLogger(__name__)


class InitProducerIdHandler:
    api_key: Final = ApiKey.INIT_PRODUCER_ID
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.INIT_PRODUCER_ID]

    def __init__(self, producer_ids: ProducerIdManager) -> None:
        self._producer_ids = producer_ids

    async def handle(self, context: RequestContext) -> ResponsePayload:
        request = as_newest(context.body, newest.InitProducerIdRequest)
        transactional_id = request.transactional_id
        if transactional_id is not None:
            if transactional_id == "":
                return self._error(ErrorCode.invalid_request, context.api_version)
            log.info(
                "InitProducerId from %s for transactional id %r: transactions are not "
                "supported yet (COORDINATOR_NOT_AVAILABLE)",
                context.client_address,
                transactional_id,
            )
            return self._error(ErrorCode.coordinator_not_available, context.api_version)
        outcome = await self._producer_ids.generate()
        if not isinstance(outcome, int):
            return self._error(outcome.code, context.api_version)
        log.debug("producer id %d (epoch 0) for %s", outcome, context.client_address)
        response = latest.InitProducerIdResponse(
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.none,
            producer_id=ProducerId(outcome),
            producer_epoch=i16(0),
        )
        return for_version(response, context.api_version)

    @staticmethod
    def _error(code: ErrorCode, version: int) -> ResponsePayload:
        response = latest.InitProducerIdResponse(
            throttle_time=NO_THROTTLE,
            error_code=code,
            producer_id=ProducerId(-1),
            producer_epoch=i16(-1),
        )
        return for_version(response, version)
