"""Producer ids for idempotent producers, handed out from blocks the controller allocates.

As Kafka's ``RPCProducerIdManager``: the broker asks the active controller for a block of
``PRODUCER_ID_BLOCK_SIZE`` (1000) ids (``AllocateProducerIds``, a ``ProducerIdsRecord`` in the
metadata log, so no id is ever handed out twice, across restarts too), gives them out one by
one, and asks for the next block when this one is used up (Kafka prefetches at 90%; a block
lasts long and the request is one round trip, so strom fetches when needed).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Final

from kio.schema.allocate_producer_ids.v0.request import AllocateProducerIdsRequest
from kio.schema.types import BrokerId
from kio.static.primitive import i64

from strom.common import ErrorCode
from strom.controller import ApiError
from strom.server.channel.controller_channel import ControllerChannel, ControllerUnavailable

__all__ = ["ProducerIdManager"]

log = logging.getLogger(__name__)

ALLOCATE_TIMEOUT: Final = 10.0
"""How long a block request may wait for the active controller (the client retries after)."""


class ProducerIdManager:
    def __init__(
        self, channel: ControllerChannel, *, broker_id: int, broker_epoch: Callable[[], int]
    ) -> None:
        self._channel = channel
        self._broker_id = broker_id
        self._broker_epoch = broker_epoch
        self._next = 0
        self._end = 0
        """The current block is ``[_next, _end)``."""
        self._lock = asyncio.Lock()

    async def generate(self) -> int | ApiError:
        """A producer id never handed out before, or the controller's error."""
        async with self._lock:
            if self._next >= self._end:
                request = AllocateProducerIdsRequest(
                    broker_id=BrokerId(self._broker_id), broker_epoch=i64(self._broker_epoch())
                )
                try:
                    block = await self._channel.send(request, timeout=ALLOCATE_TIMEOUT)
                except ControllerUnavailable as error:
                    log.error("cannot allocate producer ids: %s", error)
                    return ApiError(ErrorCode.coordinator_load_in_progress, str(error))
                if block.error_code != ErrorCode.none:
                    error_code = ErrorCode(block.error_code)
                    log.error("cannot allocate producer ids: %s", error_code.name)
                    return ApiError(error_code, f"the controller answered {error_code.name}")
                self._next = int(block.producer_id_start)
                self._end = self._next + int(block.producer_id_len)
                log.info("allocated producer ids %d to %d", self._next, self._end - 1)
            producer_id = self._next
            self._next += 1
            return producer_id
