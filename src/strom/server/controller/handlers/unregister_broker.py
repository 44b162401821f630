"""UnregisterBroker (API key 64), v0: a broker leaves the cluster's registrations
(``kafka-cluster.sh unregister``, ``strom cluster unregister``, the last step of
``strom cluster remove-broker``). Served by the active controller (brokers forward it), which
answers BROKER_ID_NOT_REGISTERED for an id it does not know, as Kafka's does.
"""

from __future__ import annotations

import logging
from typing import Any, Final, Protocol

from kio.schema.unregister_broker.v0 import response as wire
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode
from strom.controller import ApiError
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.server.api.handler_table import RequestContext
from strom.server.api.throttle import NO_THROTTLE

__all__ = ["UnregisterBrokerHandler", "error_response"]

log = logging.getLogger(__name__)


class BrokerUnregisterer(Protocol):
    """What UnregisterBroker needs of the controller."""

    async def unregister_broker(self, broker_id: int) -> ApiError:
        """UnregisterBroker over the quorum; raises NotControllerError."""
        ...


class UnregisterBrokerHandler:
    api_key: Final = ApiKey.UNREGISTER_BROKER
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.UNREGISTER_BROKER]

    def __init__(self, controller: BrokerUnregisterer) -> None:
        self._controller = controller

    async def handle(self, context: RequestContext) -> ResponsePayload:
        body: Any = context.body
        outcome = await self._controller.unregister_broker(int(body.broker_id))
        if outcome.is_success:
            log.info("broker %d unregistered by %s", body.broker_id, context.client_address)
        return _response(outcome)


def error_response(context: RequestContext, code: ErrorCode) -> ResponsePayload:
    """The request refused with ``code`` (the controller was not reached)."""
    return _response(ApiError(code))


def _response(outcome: ApiError) -> ResponsePayload:
    return wire.UnregisterBrokerResponse(
        throttle_time=NO_THROTTLE,
        error_code=outcome.code,
        error_message=outcome.message if outcome.is_failure else None,
    )
