"""Producer ids for idempotent producers, handed out from blocks the controller allocates.

As Kafka's ``RPCProducerIdManager``: the broker asks the controller for a block of
``PRODUCER_ID_BLOCK_SIZE`` (1000) ids (``AllocateProducerIds``, a ``ProducerIdsRecord`` in the
metadata log, so no id is ever handed out twice, across restarts too), gives them out one by
one, and asks for the next block when this one is used up. Kafka prefetches the next block when
90% of the current one is gone; here the controller is in-process and answers at once, so the
block is fetched when needed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from strom.controller import ApiError
from strom.server.controller_server import ControllerServer

__all__ = ["ProducerIdManager"]

log = logging.getLogger(__name__)


class ProducerIdManager:
    def __init__(
        self, controller: ControllerServer, *, broker_id: int, broker_epoch: Callable[[], int]
    ) -> None:
        self._controller = controller
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
                block = await self._controller.allocate_producer_ids(
                    broker_id=self._broker_id, broker_epoch=self._broker_epoch()
                )
                if block.error.is_failure:
                    log.error("cannot allocate producer ids: %s", block.error.message)
                    return block.error
                self._next = block.first_producer_id
                self._end = block.first_producer_id + block.size
                log.info("allocated producer ids %d to %d", block.first_producer_id, self._end - 1)
            producer_id = self._next
            self._next += 1
            return producer_id
