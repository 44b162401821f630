"""Envelope (API key 58), v0, on the controller listener: a client's admin request that a broker
forwarded, with the client's address and principal. The broker needs CLUSTER_ACTION on the
cluster (``super.users``); the inner request is then authorized as the client's, or as the
broker's own when it carries no principal (the broker creating an internal topic).

The inner request is decoded with the controller listener's own table and answered by the
controller's handler of its API, exactly as if the client had sent it; the answer (header and
body) goes back inside the envelope for the broker to hand to its client. A controller that is
not active answers NOT_CONTROLLER on the envelope itself, so that the broker retries with the new
active controller. One that loses the leadership after it wrote the request's records, before
they were committed, answers REQUEST_TIMED_OUT there instead (the outcome is unknown: the new
controller may commit them, and a retry would then meet them, e.g. TOPIC_ALREADY_EXISTS for a
topic this request created); the broker hands that to its client in the API's own answer.

The inner request's handling time counts under the client's ``request_percentage`` here too,
as Kafka's controller counts it: its throttle goes into the answer's ``throttle_time_ms``, for
the broker to mute its client with (the envelope's own connection is never muted).
"""

from __future__ import annotations

import ipaddress
import logging
from typing import Final, Protocol

from kio.schema.envelope.v0 import request as newest
from kio.schema.envelope.v0 import response as latest
from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from strom.protocol.api import (
    KAFKA_CONTROLLER_VERSIONS,
    ApiKey,
    InvalidRequestError,
    decode_request,
    encode_response,
)
from strom.security.acls import AclOperation
from strom.security.principal import deserialize_principal
from strom.server.api.handler_table import HandlerTable, NoResponse, RequestContext
from strom.server.api.kio_entities import as_newest
from strom.server.api.response import Response
from strom.server.controller.controller_server import CommitUnknownError, NotControllerError
from strom.server.network.request_time import request_time
from strom.server.quotas.client_quotas import ClientQuotaManager

__all__ = ["EnvelopeHandler"]

log = logging.getLogger(__name__)


class ActiveController(Protocol):
    """What Envelope needs of the controller."""

    @property
    def is_active(self) -> bool:
        """Whether this node is the active controller."""
        ...


class EnvelopeHandler:
    api_key: Final = ApiKey.ENVELOPE
    versions: Final = KAFKA_CONTROLLER_VERSIONS[ApiKey.ENVELOPE]

    def __init__(
        self,
        registry: HandlerTable,
        controller: ActiveController,
        *,
        request_quota: ClientQuotaManager,
        request_exempt: frozenset[ApiKey],
    ) -> None:
        """``request_quota``: the controller's, counting the inner requests but
        ``request_exempt``'s (as its listener's connections count requests)."""
        self._registry = registry
        self._controller = controller
        self._request_quota = request_quota
        self._request_exempt = request_exempt

    async def handle(self, context: RequestContext) -> ResponsePayload:
        envelope = as_newest(context.body, newest.EnvelopeRequest)
        if not context.authorize(AclOperation.CLUSTER_ACTION):
            return _answer(ErrorCode.cluster_authorization_failed)
        if not self._controller.is_active:
            return _answer(ErrorCode.not_controller)
        try:
            inner = decode_request(envelope.request_data, versions=self._registry.versions)
        except InvalidRequestError as error:
            log.warning("envelope from %s: %s", context.client_address, error)
            return _answer(ErrorCode.invalid_request)
        handler = self._registry.get(inner.api_key)
        if handler is None or inner.api_key == ApiKey.ENVELOPE:
            return _answer(ErrorCode.invalid_request)
        if envelope.request_principal:  # a client's request: authorized as the client
            try:
                principal = deserialize_principal(envelope.request_principal)
            except ValueError as error:
                log.warning("envelope from %s: %s", context.client_address, error)
                return _answer(ErrorCode.principal_deserialization_failure)
            authorizer = self._registry.authorizer
        else:  # the broker's own request (an internal topic): authorized as the broker
            principal, authorizer = context.principal, context.authorizer
        inner_context = RequestContext(
            request=inner,
            client_address=_host(envelope.client_host_address) or context.client_address,
            connection_id=context.connection_id,
            listener_name=context.listener_name,
            principal=principal,
            authorizer=authorizer,
        )
        try:
            timer = request_time(self._request_quota, inner_context, self._request_exempt)
            if timer is not None:
                result = await timer.serve(handler.handle(timer.context))
            else:
                result = await handler.handle(inner_context)
        except CommitUnknownError as error:
            log.warning("%s from %s: %s", inner.api_key.name, inner_context.client_address, error)
            return _answer(ErrorCode.request_timed_out)
        except NotControllerError:
            return _answer(ErrorCode.not_controller)
        if isinstance(result, Response | NoResponse):
            return _answer(ErrorCode.invalid_request)
        return _answer(
            ErrorCode.none, encode_response(correlation_id=inner.correlation_id, body=result)
        )


def _answer(error: ErrorCode, data: bytes | None = None) -> ResponsePayload:
    return latest.EnvelopeResponse(response_data=data, error_code=error)


def _host(raw: bytes) -> str | None:
    """The client's IP address as the envelope carries it (4 or 16 bytes)."""
    try:
        return str(ipaddress.ip_address(raw))
    except ValueError:
        return None
