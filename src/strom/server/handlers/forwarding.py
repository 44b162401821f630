"""Admin requests a broker forwards to the active controller inside an Envelope (API key 58), as
Kafka's brokers do: CreateTopics, DeleteTopics, CreatePartitions, ElectLeaders, AlterConfigs,
IncrementalAlterConfigs, DescribeQuorum.

The client's request goes as it came (header and body) with its address, through the
:class:`~strom.server.channel.controller_channel.ControllerChannel` (which retries while the active
controller changes), and the controller's answer is handed back to the client unchanged but for
its throttle: the client's connection is muted for the controller's ``throttle_time_ms`` (its
quotas: the request quota and the mutation rate there), or longer when this broker's request
quota throttles the request more (Kafka's ``sendForwardedResponse``). If no controller takes it
in time, or its outcome is unknown (it went out and no answer came, or the controller lost the
leadership before committing it), the client gets REQUEST_TIMED_OUT (or the envelope's error) in
the API's own answer (``error_response``), never an answer that invites a blind retry.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Final, Protocol

from kio.schema.errors import ErrorCode
from kio.static.protocol import RequestPayload, ResponsePayload

from strom.protocol.api import ApiKey, VersionRange, api_name
from strom.protocol.headers import RequestHeader
from strom.security.principal import KafkaPrincipal
from strom.server.api.handler_table import RequestContext
from strom.server.api.throttle import throttle_of
from strom.server.channel.controller_channel import ControllerUnavailable, EnvelopeRefused

__all__ = ["FORWARD_TIMEOUT", "ErrorResponse", "ForwardingHandler"]

log = logging.getLogger(__name__)

FORWARD_TIMEOUT: Final = 30.0
"""How long a forwarded request may wait for an active controller (Kafka's
``request.timeout.ms`` of the forwarding channel)."""

ErrorResponse = Callable[[RequestContext, ErrorCode], ResponsePayload]
"""The API's answer to the request with every item failed with one error code."""


class Forwarder(Protocol):
    """What forwarding needs of the broker's channel to the active controller."""

    async def forward(
        self,
        body: RequestPayload,
        *,
        header: RequestHeader | None = None,
        client_address: str = "",
        principal: KafkaPrincipal | None = None,
        timeout: float,
    ) -> Any:
        """``body`` inside an Envelope to the active controller; the inner response. Raises
        ControllerUnavailable or EnvelopeRefused."""
        ...


class ForwardingHandler:
    def __init__(
        self,
        api_key: ApiKey,
        versions: VersionRange,
        channel: Forwarder,
        *,
        error_response: ErrorResponse,
    ) -> None:
        self.api_key: Final = api_key
        self.versions: Final = versions
        self._channel = channel
        self._error_response = error_response

    async def handle(self, context: RequestContext) -> ResponsePayload:
        try:
            response: ResponsePayload = await self._channel.forward(
                context.kio_body,
                header=context.header,
                client_address=context.client_address,
                principal=context.principal,
                timeout=FORWARD_TIMEOUT,
            )
        except ControllerUnavailable as error:
            log.warning("%s from %s: %s", api_name(self.api_key), context.client_address, error)
            return self._error_response(context, ErrorCode.request_timed_out)
        except EnvelopeRefused as error:
            log.warning("%s from %s: %s", api_name(self.api_key), context.client_address, error)
            return self._error_response(context, error.error_code)
        context.throttle(throttle_of(response))
        return response
