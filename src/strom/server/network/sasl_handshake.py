"""SaslHandshake (API key 17), v0 and v1: the client names its SASL mechanism.

A SASL listener's connection answers it itself while authenticating
(``strom.server.network.sasl_connection``) with :func:`handshake_response`. Reaching this
handler means the listener is not SASL (or the request came another way): ILLEGAL_SASL_STATE, as
Kafka's ``KafkaApis`` answers.
"""

from __future__ import annotations

from typing import Final

from kio.schema.sasl_handshake.v1 import response as latest
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import for_version

__all__ = ["SaslHandshakeHandler", "handshake_response"]


def handshake_response(
    version: int, error: ErrorCode, mechanisms: tuple[str, ...]
) -> ResponsePayload:
    return for_version(
        latest.SaslHandshakeResponse(error_code=error, mechanisms=mechanisms), version
    )


class SaslHandshakeHandler:
    api_key: Final = ApiKey.SASL_HANDSHAKE
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.SASL_HANDSHAKE]

    async def handle(self, context: RequestContext) -> ResponsePayload:
        return handshake_response(context.api_version, ErrorCode.illegal_sasl_state, ())
