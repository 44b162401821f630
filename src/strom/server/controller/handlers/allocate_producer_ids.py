"""AllocateProducerIds (API key 67), v0, on the controller listener: the next block of producer
ids for a broker (a ProducerIdsRecord, so no id is ever handed out twice)."""

from __future__ import annotations

from typing import Final, Protocol

from kio.schema.allocate_producer_ids.v0 import request as newest
from kio.schema.allocate_producer_ids.v0 import response as latest
from kio.schema.errors import ErrorCode
from kio.schema.types import ProducerId
from kio.static.primitive import i32
from kio.static.protocol import ResponsePayload

from strom.controller import ProducerIdsBlock
from strom.protocol.api import KAFKA_CONTROLLER_VERSIONS, ApiKey
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import as_newest
from strom.server.api.throttle import NO_THROTTLE

__all__ = ["AllocateProducerIdsHandler"]


class ProducerIdsAllocator(Protocol):
    """What AllocateProducerIds needs of the controller."""

    async def allocate_producer_ids(self, *, broker_id: int, broker_epoch: int) -> ProducerIdsBlock:
        """The next block of producer ids for the broker; raises NotControllerError."""
        ...


class AllocateProducerIdsHandler:
    api_key: Final = ApiKey.ALLOCATE_PRODUCER_IDS
    versions: Final = KAFKA_CONTROLLER_VERSIONS[ApiKey.ALLOCATE_PRODUCER_IDS]

    def __init__(self, controller: ProducerIdsAllocator) -> None:
        self._controller = controller

    async def handle(self, context: RequestContext) -> ResponsePayload:
        request = as_newest(context.body, newest.AllocateProducerIdsRequest)
        block = await self._controller.allocate_producer_ids(
            broker_id=int(request.broker_id), broker_epoch=int(request.broker_epoch)
        )
        if block.error.is_failure:
            return _answer(block.error.code)
        return _answer(ErrorCode.none, block.first_producer_id, block.size)


def error_response(context: RequestContext, code: ErrorCode) -> ResponsePayload:
    """The answer with ``code`` and no block (the controller was not reached)."""
    return _answer(code)


def _answer(error: ErrorCode, start: int = -1, length: int = 0) -> ResponsePayload:
    return latest.AllocateProducerIdsResponse(
        throttle_time=NO_THROTTLE,
        error_code=error,
        producer_id_start=ProducerId(start),
        producer_id_len=i32(length),
    )
