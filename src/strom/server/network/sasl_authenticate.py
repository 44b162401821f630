"""SaslAuthenticate (API key 36), v0 to v2: one SASL token each way (KIP-152), and from v1 the
session's lifetime (KIP-368).

A SASL listener's connection answers it itself while authenticating
(``strom.server.network.sasl_connection``) with :func:`authenticate_response`. Reaching this
handler means the listener is not SASL: ILLEGAL_SASL_STATE, as Kafka's ``KafkaApis`` answers.
"""

from __future__ import annotations

import datetime
from typing import Final

from kio.schema.sasl_authenticate.v2 import response as latest
from kio.static.primitive import i64Timedelta
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import for_version

__all__ = ["SaslAuthenticateHandler", "authenticate_response"]


def authenticate_response(
    version: int,
    error: ErrorCode,
    message: str | None,
    token: bytes = b"",
    session_lifetime_ms: int = 0,
) -> ResponsePayload:
    lifetime = i64Timedelta.parse(datetime.timedelta(milliseconds=session_lifetime_ms))
    response = latest.SaslAuthenticateResponse(
        error_code=error, error_message=message, auth_bytes=token, session_lifetime=lifetime
    )
    return for_version(response, version)


class SaslAuthenticateHandler:
    api_key: Final = ApiKey.SASL_AUTHENTICATE
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.SASL_AUTHENTICATE]

    async def handle(self, context: RequestContext) -> ResponsePayload:
        return authenticate_response(
            context.api_version,
            ErrorCode.illegal_sasl_state,
            "SaslAuthenticate request received after successful authentication",
        )
