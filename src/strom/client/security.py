"""How a node-to-node client connection is secured: TLS and the client's side of SASL.

:func:`sasl_exchange` is the SASL login as a generator (sans I/O): it yields each request
(SaslHandshake v1, then SaslAuthenticate v1 with the mechanism's tokens), is sent each answer,
and returns the session's lifetime in milliseconds (KIP-368; 0 for none). The async and blocking
clients run it right after connecting, before any other request. PLAIN, SCRAM-SHA-256,
SCRAM-SHA-512, and OAUTHBEARER with an unsecured token naming ``username``.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from typing import Any

from kio.static.protocol import RequestPayload

from strom.security.oauthbearer import OAUTHBEARER, oauthbearer_message, unsecured_token
from strom.security.scram import ScramClient, ScramMechanism

__all__ = [
    "PLAINTEXT",
    "AuthenticationFailed",
    "ClientSecurity",
    "SaslExchange",
    "librdkafka_security",
    "sasl_exchange",
]


class AuthenticationFailed(ConnectionError):
    """The server refused the login (or could not prove it knows the SCRAM password)."""


SaslExchange = Generator[RequestPayload, Any, int]

_TOKEN_LIFETIME_S = 3600
"""OAUTHBEARER: the life of this node's unsecured token (``unsecuredLoginLifetimeSeconds``)."""


@dataclass(frozen=True, slots=True)
class ClientSecurity:
    """TLS (``ssl_context``) and SASL (``mechanism`` with a user and password) of a client."""

    ssl_context: ssl.SSLContext | None = None
    mechanism: str | None = None
    username: str = ""
    password: str = ""

    def __repr__(self) -> str:
        return (
            f"ClientSecurity(tls={self.ssl_context is not None}, mechanism={self.mechanism}, "
            f"username={self.username!r})"
        )


PLAINTEXT = ClientSecurity()


def librdkafka_security(settings: Mapping[str, Any]) -> ClientSecurity:
    """The security of librdkafka settings (``security.protocol``, ``ssl.ca.location`` or
    ``ssl.ca.pem``, ``ssl.certificate.location``, ``ssl.key.location`` and ``ssl.key.password``,
    ``ssl.endpoint.identification.algorithm``, ``sasl.mechanism``, ``sasl.username``,
    ``sasl.password``), for strom's own clients beside a librdkafka one."""
    protocol = str(settings.get("security.protocol", "PLAINTEXT")).upper()
    context = None
    if protocol in ("SSL", "SASL_SSL"):
        context = ssl.create_default_context(
            cafile=settings.get("ssl.ca.location"), cadata=settings.get("ssl.ca.pem")
        )
        if str(settings.get("ssl.endpoint.identification.algorithm", "https")).lower() == "none":
            context.check_hostname = False
        if settings.get("ssl.certificate.location"):
            context.load_cert_chain(
                settings["ssl.certificate.location"],
                settings.get("ssl.key.location"),
                settings.get("ssl.key.password"),
            )
    if protocol not in ("SASL_PLAINTEXT", "SASL_SSL"):
        return ClientSecurity(ssl_context=context)
    return ClientSecurity(
        context,
        str(settings.get("sasl.mechanism", "PLAIN")).upper(),
        str(settings.get("sasl.username", "")),
        str(settings.get("sasl.password", "")),
    )


def _check(response: Any, step: str) -> bytes:
    if int(response.error_code) != 0:
        message = getattr(response, "error_message", None) or f"error code {response.error_code}"
        raise AuthenticationFailed(f"SASL {step} failed: {message}")
    return bytes(getattr(response, "auth_bytes", b""))


def sasl_exchange(security: ClientSecurity) -> SaslExchange:
    """The SASL login of ``security`` (whose ``mechanism`` must be set); its schemas are
    imported by the first login."""
    from kio.schema.sasl_authenticate.v1.request import SaslAuthenticateRequest  # noqa: PLC0415
    from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest  # noqa: PLC0415

    mechanism = security.mechanism
    assert mechanism is not None
    handshake = yield SaslHandshakeRequest(mechanism=mechanism)
    if int(handshake.error_code) != 0:
        raise AuthenticationFailed(
            f"the server does not enable SASL mechanism {mechanism} "
            f"(it enables {', '.join(handshake.mechanisms) or 'none'})"
        )
    scram = ScramMechanism.from_name(mechanism)
    if mechanism == OAUTHBEARER:
        jwt = unsecured_token(security.username, expiry_s=time.time() + _TOKEN_LIFETIME_S)
        response = yield SaslAuthenticateRequest(auth_bytes=oauthbearer_message(jwt))
        if _check(response, "authentication"):  # a JSON error: acknowledge it, then fail
            response = yield SaslAuthenticateRequest(auth_bytes=b"\x01")
            _check(response, "authentication")
            raise AuthenticationFailed("the server refused the OAUTHBEARER token")
    elif scram is None:
        token = f"\0{security.username}\0{security.password}".encode()
        response = yield SaslAuthenticateRequest(auth_bytes=token)
        _check(response, "authentication")
    else:
        client = ScramClient(scram, security.username, security.password)
        response = yield SaslAuthenticateRequest(auth_bytes=client.first_message())
        server_first = _check(response, "authentication")
        try:
            final = client.final_message(server_first)
        except ValueError as error:
            raise AuthenticationFailed(str(error)) from None
        response = yield SaslAuthenticateRequest(auth_bytes=final)
        try:
            client.verify(_check(response, "authentication"))
        except ValueError as error:
            raise AuthenticationFailed(str(error)) from None
    return int(response.session_lifetime.total_seconds() * 1000)
