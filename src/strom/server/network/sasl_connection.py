"""A connection of a SASL listener (SASL_PLAINTEXT, SASL_SSL): authenticate, then serve.

The authentication itself is ``strom.security.sasl_authenticator.SaslAuthenticator``; this class
only feeds it. SaslHandshake and SaslAuthenticate are answered here, in request order with the
rest (they go through the same in-flight queue); after SaslHandshake v0 the tokens come as bare
frames and are answered bare. Before authentication only ApiVersions is served: another request,
or any request once the session has expired, closes the connection at once; a failed
authentication or an unsupported mechanism closes it once that answer is written (the client
reads SASL_AUTHENTICATION_FAILED or UNSUPPORTED_SASL_MECHANISM first). The principal of every
later request is the authenticated user.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from kio.schema.sasl_authenticate.v2.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest
from kio.static.protocol import ResponsePayload

from strom.protocol.api import ApiKey, Request, api_name, encode_response
from strom.protocol.framing import BytesLike
from strom.security.sasl_authenticator import SaslAuthenticator
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import as_newest
from strom.server.api.response import Response
from strom.server.network.connection import Connection
from strom.server.network.request_time import RequestTime
from strom.server.network.sasl_authenticate import authenticate_response
from strom.server.network.sasl_handshake import handshake_response
from strom.server.quotas.client_quotas import ClientQuotas

__all__ = ["SaslConnection"]

log = logging.getLogger(__name__)


class SaslConnection(Connection):
    """A :class:`Connection` that authenticates with SASL before it serves."""

    def __init__(
        self, *, authenticator: SaslAuthenticator, max_receive_size: int, **kwargs: Any
    ) -> None:
        """``max_receive_size``: the largest frame before authentication (Kafka's
        ``sasl.server.max.receive.size``); ``socket.request.max.bytes`` after it."""
        super().__init__(**kwargs)
        self._authenticator = authenticator
        self._decoder.max_frame_size = min(max_receive_size, self._settings.max_request_size)
        self._handshake: RequestContext | None = None
        """The last SaslHandshake's context: bare tokens (v0) are queued under it."""

    def _dispatch(self, frame: BytesLike) -> bool:
        authenticator = self._authenticator
        if authenticator.expects_raw_token:
            return self._raw_token(bytes(frame))
        request = self._decode(frame)
        if request is None:
            return False
        api_key = request.api_key
        if api_key == ApiKey.SASL_HANDSHAKE:
            self._handshake = self._context(request)
            handshake = as_newest(request.body, SaslHandshakeRequest)
            outcome = authenticator.handshake(handshake.mechanism, request.api_version)
            body = handshake_response(request.api_version, outcome.error, outcome.mechanisms)
            return self._answer(request, body, close=outcome.close)
        if api_key == ApiKey.SASL_AUTHENTICATE:
            token = as_newest(request.body, SaslAuthenticateRequest).auth_bytes
            result = authenticator.authenticate(token, _now_ms())
            self._take_principal()
            body = authenticate_response(
                request.api_version,
                result.error,
                result.message,
                result.token,
                result.session_lifetime_ms,
            )
            return self._answer(request, body, close=result.close)
        refusal = authenticator.refusal(api_name(api_key), _now_ms())
        if refusal is not None:
            self._fail(refusal)
            return False
        return self._serve(request)

    def _counted(self, quotas: ClientQuotas, context: RequestContext) -> RequestTime | None:
        """Nothing before authentication counts under the request quota (Kafka's
        authenticator answers it before any quota)."""
        if self._authenticator.principal is None:
            return None
        return super()._counted(quotas, context)

    def _take_principal(self) -> None:
        """Later requests come from the authenticated user, and may be as large as any."""
        if self._authenticator.principal is not None:
            self.principal = self._authenticator.principal
            self._decoder.max_frame_size = self._settings.max_request_size

    def _answer(self, request: Request, body: ResponsePayload, *, close: bool) -> bool:
        """Queue the answer; a refusal is answered after ``connection.failed.authentication
        .delay.ms`` (and the connection closed then), as Kafka slows down password guessing."""
        frame = encode_response(correlation_id=request.correlation_id, body=body)
        delay = self._failure_delay_s if close else 0.0
        self._start(_ready(Response.of(frame), delay), self._context(request))
        return self._close_after_answers(close)

    @property
    def _failure_delay_s(self) -> float:
        return self._settings.failed_authentication_delay_ms / 1000

    def _raw_token(self, token: bytes) -> bool:
        """SaslHandshake v0: the token came bare and its challenge goes back bare; a failure
        has no error field to carry, so the connection just closes (as Kafka's does)."""
        outcome = self._authenticator.authenticate(token, _now_ms())
        self._take_principal()
        assert self._handshake is not None  # bare tokens only follow SaslHandshake v0
        if outcome.close:  # nothing to answer: the connection closes after the delay
            self._start(_silence(self._failure_delay_s), self._handshake)
            return self._close_after_answers(True)
        self._start(_ready(Response.of(outcome.token)), self._handshake)
        return True

    def _close_after_answers(self, close: bool) -> bool:
        if not close:
            return True
        log.info("closing connection from %s: %s", self.client_address, self._authenticator.failure)
        self._close_input()
        return False


async def _silence(delay_s: float) -> None:
    await asyncio.sleep(delay_s)


async def _ready(response: Response, delay_s: float = 0.0) -> Response:
    if delay_s > 0:
        await asyncio.sleep(delay_s)
    return response


def _now_ms() -> int:
    return int(time.time() * 1000)
