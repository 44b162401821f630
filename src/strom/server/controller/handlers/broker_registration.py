"""BrokerRegistration (API key 62), v0 to v4, on the controller listener: a broker starts a new
session (broker epoch) with its listeners, rack, features and incarnation id; fenced until its
heartbeats show it has caught up with the metadata log."""

from __future__ import annotations

import uuid
from typing import Final, Protocol

from kio.schema.broker_registration.v4 import request as newest
from kio.schema.broker_registration.v4 import response as latest
from kio.schema.errors import ErrorCode
from kio.static.primitive import i64
from kio.static.protocol import ResponsePayload

from strom.controller import BrokerRegistrationReply, BrokerRegistrationRequest
from strom.metadata import BrokerEndpoint, BrokerFeature, SecurityProtocol
from strom.protocol.api import KAFKA_CONTROLLER_VERSIONS, ApiKey
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import as_newest, for_version, request_field
from strom.server.api.throttle import NO_THROTTLE

__all__ = ["BrokerRegistrationHandler"]


class BrokerRegistrar(Protocol):
    """What BrokerRegistration needs of the controller."""

    async def register_broker(self, request: BrokerRegistrationRequest) -> BrokerRegistrationReply:
        """A broker's registration; raises NotControllerError."""
        ...


class BrokerRegistrationHandler:
    api_key: Final = ApiKey.BROKER_REGISTRATION
    versions: Final = KAFKA_CONTROLLER_VERSIONS[ApiKey.BROKER_REGISTRATION]

    def __init__(self, controller: BrokerRegistrar, *, cluster_id: str) -> None:
        self._controller = controller
        self._cluster_id = cluster_id

    async def handle(self, context: RequestContext) -> ResponsePayload:
        request = as_newest(context.body, newest.BrokerRegistrationRequest)
        if request.cluster_id != self._cluster_id:
            return _answer(context, ErrorCode.inconsistent_cluster_id)
        reply = await self._controller.register_broker(
            BrokerRegistrationRequest(
                broker_id=int(request.broker_id),
                incarnation_id=request.incarnation_id or uuid.UUID(int=0),
                endpoints=tuple(
                    BrokerEndpoint(
                        listener.name,
                        listener.host,
                        int(listener.port),
                        SecurityProtocol(int(listener.security_protocol)),
                    )
                    for listener in request.listeners
                ),
                features=tuple(
                    BrokerFeature(
                        feature.name,
                        int(feature.min_supported_version),
                        int(feature.max_supported_version),
                    )
                    for feature in request.features
                ),
                rack=request.rack,
                log_dirs=_log_dirs(context.body),
                previous_broker_epoch=_previous_broker_epoch(context.body),
            )
        )
        return _answer(context, reply.error.code, reply.broker_epoch)


def error_response(context: RequestContext, code: ErrorCode) -> ResponsePayload:
    """The answer with ``code`` and no broker epoch (the controller was not reached)."""
    return _answer(context, code)


def _answer(context: RequestContext, error: ErrorCode, epoch: int = -1) -> ResponsePayload:
    response = latest.BrokerRegistrationResponse(
        throttle_time=NO_THROTTLE, error_code=error, broker_epoch=i64(epoch)
    )
    return for_version(response, context.api_version)


def _previous_broker_epoch(body: object) -> int:
    """The epoch the broker's last session ended cleanly in (v3+; -1: none)."""
    return int(request_field(body, "previous_broker_epoch", -1))


def _log_dirs(body: object) -> tuple[uuid.UUID, ...]:
    """The broker's log directory ids (v2+)."""
    given: tuple[uuid.UUID | None, ...] = request_field(body, "log_dirs", ())
    return tuple(directory for directory in given if directory is not None)
