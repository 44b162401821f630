"""The server side of one SASL connection, as Kafka's ``SaslServerAuthenticator`` (sans I/O).

States (an Enum and a transition table, each trigger named):

* ``HANDSHAKE``: ApiVersions (any number: clients retry lower versions) or SaslHandshake. A
  mechanism the listener enables moves on to AUTHENTICATE; another is answered
  UNSUPPORTED_SASL_MECHANISM and the connection closes.
* ``AUTHENTICATE``: the mechanism's tokens, in SaslAuthenticate requests after SaslHandshake
  v1, bare size-prefixed frames after v0. A failure is answered SASL_AUTHENTICATION_FAILED
  and closes; the mechanism completing moves on to COMPLETE.
* ``COMPLETE``: every API is served while the session lasts. The session lasts
  ``connections.max.reauth.ms`` (KIP-368), or until the credential expires if sooner; it is
  told to SaslAuthenticate v1+ clients, and a request other than SaslHandshake after it ended
  closes the connection. SaslHandshake starts a re-authentication (REAUTHENTICATE) with the
  same mechanism, which must end with the same principal.
* ``FAILED``: closing; nothing more is read.

Any other request, or a SASL request out of order, is ILLEGAL_SASL_STATE and closes.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from strom.common import ErrorCode
from strom.security.principal import KafkaPrincipal
from strom.security.sasl import MechanismFactory, SaslAuthenticationError, SaslMechanismServer

__all__ = ["AuthenticateOutcome", "HandshakeOutcome", "SaslAuthenticator", "SaslState"]


class SaslState(enum.Enum):
    HANDSHAKE = "handshake"
    AUTHENTICATE = "authenticate"
    REAUTHENTICATE = "re-authenticate"
    COMPLETE = "complete"
    FAILED = "failed"


_TRANSITIONS: Final[Mapping[tuple[SaslState, str], SaslState]] = {
    (SaslState.HANDSHAKE, "handshake"): SaslState.AUTHENTICATE,
    (SaslState.AUTHENTICATE, "authenticated"): SaslState.COMPLETE,
    (SaslState.COMPLETE, "handshake"): SaslState.REAUTHENTICATE,
    (SaslState.REAUTHENTICATE, "authenticated"): SaslState.COMPLETE,
}
"""(state, trigger) -> next state; "failed" leads to FAILED from anywhere."""


@dataclass(frozen=True, slots=True)
class HandshakeOutcome:
    error: ErrorCode
    mechanisms: tuple[str, ...]
    close: bool


@dataclass(frozen=True, slots=True)
class AuthenticateOutcome:
    error: ErrorCode
    message: str | None
    token: bytes
    session_lifetime_ms: int
    close: bool


class SaslAuthenticator:
    """One connection's authentication: feed it the SASL requests and ask it about the rest."""

    def __init__(
        self,
        *,
        mechanisms: Mapping[str, MechanismFactory],
        max_reauth_ms: int,
    ) -> None:
        """``mechanisms``: the listener's enabled ones, in ``sasl.enabled.mechanisms`` order."""
        self._factories = mechanisms
        self._max_reauth_ms = max_reauth_ms
        self.state = SaslState.HANDSHAKE
        self.principal: KafkaPrincipal | None = None
        self._server: SaslMechanismServer | None = None
        self._mechanism: str | None = None
        self._raw_tokens = False
        self._session_end_ms: int | None = None
        self.failure: str | None = None
        """Why the connection is closing (for the log line)."""

    @property
    def expects_raw_token(self) -> bool:
        """After SaslHandshake v0 the next frames are bare tokens, not Kafka requests."""
        return self._raw_tokens and self.state in (SaslState.AUTHENTICATE, SaslState.REAUTHENTICATE)

    @property
    def authenticated(self) -> bool:
        return self.state is SaslState.COMPLETE

    def _move(self, trigger: str) -> None:
        self.state = _TRANSITIONS[(self.state, trigger)]

    def _fail(self, reason: str) -> None:
        self.state = SaslState.FAILED
        self.failure = reason

    def refusal(self, api_name: str, now_ms: int) -> str | None:
        """Why a request of another API may not be served now (None: serve it); the
        connection closes when there is a reason."""
        if self.state is SaslState.COMPLETE:
            if self._session_end_ms is not None and now_ms >= self._session_end_ms:
                self._fail("the SASL session expired without re-authentication")
                return self.failure
            return None
        if self.state is SaslState.HANDSHAKE and api_name == "ApiVersions":
            return None
        self._fail(f"unexpected Kafka request of type {api_name} during SASL {self.state.value}")
        return self.failure

    def handshake(self, mechanism: str, version: int) -> HandshakeOutcome:
        enabled = tuple(self._factories)
        if self.state not in (SaslState.HANDSHAKE, SaslState.COMPLETE):
            self._fail(f"unexpected SaslHandshake during SASL {self.state.value}")
            return HandshakeOutcome(ErrorCode.illegal_sasl_state, enabled, close=True)
        factory = self._factories.get(mechanism)
        if factory is None:
            self._fail(f"unsupported SASL mechanism {mechanism!r}")
            return HandshakeOutcome(ErrorCode.unsupported_sasl_mechanism, enabled, close=True)
        if self.state is SaslState.COMPLETE and mechanism != self._mechanism:
            self._fail(
                f"SASL mechanism '{mechanism}' requested by client is not supported for "
                f"re-authentication of mechanism '{self._mechanism}'"
            )
            return HandshakeOutcome(ErrorCode.illegal_sasl_state, enabled, close=True)
        self._move("handshake")
        self._mechanism = mechanism
        self._server = factory()
        self._raw_tokens = version == 0
        return HandshakeOutcome(ErrorCode.none, enabled, close=False)

    def authenticate(self, token: bytes, now_ms: int) -> AuthenticateOutcome:
        """One token of the exchange (from SaslAuthenticate, or bare after handshake v0)."""
        server = self._server
        if server is None or self.state not in (SaslState.AUTHENTICATE, SaslState.REAUTHENTICATE):
            self._fail(f"unexpected SaslAuthenticate during SASL {self.state.value}")
            return _failure(ErrorCode.illegal_sasl_state, self.failure)
        reauthenticating = self.state is SaslState.REAUTHENTICATE
        try:
            challenge = server.evaluate(token)
            if not server.complete:
                return AuthenticateOutcome(ErrorCode.none, None, challenge, 0, close=False)
            principal = KafkaPrincipal.user(server.user)
            if reauthenticating and principal != self.principal:
                raise SaslAuthenticationError(
                    f"Cannot change principals during re-authentication from "
                    f"{self.principal}: {principal}"
                )
        except SaslAuthenticationError as error:
            self._fail(f"SASL/{self._mechanism} authentication failed: {error}")
            return _failure(ErrorCode.sasl_authentication_failed, str(error))
        self.principal = principal
        lifetime = self._session_lifetime(server, now_ms)
        self._session_end_ms = now_ms + lifetime if lifetime or self._expires(server) else None
        self._move("authenticated")
        return AuthenticateOutcome(ErrorCode.none, None, challenge, lifetime, close=False)

    def _expires(self, server: SaslMechanismServer) -> bool:
        return self._max_reauth_ms > 0 or server.credential_expiry_ms is not None

    def _session_lifetime(self, server: SaslMechanismServer, now_ms: int) -> int:
        """KIP-368: the lesser of ``connections.max.reauth.ms`` and the credential's remaining
        life (0: no limit)."""
        limits = []
        if self._max_reauth_ms > 0:
            limits.append(self._max_reauth_ms)
        if server.credential_expiry_ms is not None:
            limits.append(server.credential_expiry_ms - now_ms)
        return max(0, min(limits)) if limits else 0


def _failure(error: ErrorCode, message: str | None) -> AuthenticateOutcome:
    return AuthenticateOutcome(error, message, b"", 0, close=True)
