"""SASL/OAUTHBEARER (RFC 7628) with unsecured JWTs, as Kafka's ``OAuthBearerSaslServer`` and
``OAuthBearerUnsecuredValidatorCallbackHandler`` check them: for development only, since anyone
can write such a token.

The client's message is ``n,[a=<authzid>],\\x01auth=Bearer <token>\\x01[key=value\\x01]...\\x01``.
The token is ``<header>.<claims>.`` in base64url, its header's ``alg`` is ``none``; the claims
need the principal claim (``sub`` unless ``unsecuredValidatorPrincipalClaimName`` says another)
and ``exp`` (seconds) in the future, allow an ``iat`` not in the future, and must hold the
scopes of ``unsecuredValidatorRequiredScope`` in their scope claim. A token that fails is
answered with a JSON error (``{"status":"invalid_token"}``); the client acknowledges with
``\\x01`` and then authentication fails, as Kafka does it. The session ends when the token does.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from strom.security.sasl import SaslAuthenticationError

__all__ = [
    "OAUTHBEARER",
    "InvalidToken",
    "OAuthBearerServer",
    "TokenValidator",
    "UnsecuredValidator",
    "ValidToken",
    "decode_part",
    "oauthbearer_message",
    "unsecured_token",
]

OAUTHBEARER: Final = "OAUTHBEARER"
_SEPARATOR: Final = "\x01"


class InvalidToken(ValueError):
    """The token is not acceptable; ``status`` and ``scope`` go to the client as JSON."""

    def __init__(self, reason: str, *, status: str = "invalid_token", scope: str | None = None):
        super().__init__(reason)
        self.status = status
        self.scope = scope


@dataclass(frozen=True, slots=True)
class ValidToken:
    principal: str
    expiry_ms: int


def decode_part(text: str) -> dict[str, Any]:
    try:
        value = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (binascii.Error, ValueError) as error:
        raise InvalidToken(f"malformed JWT part: {error}") from None
    if not isinstance(value, dict):
        raise InvalidToken("a JWT part is not a JSON object")
    return value


class TokenValidator(Protocol):
    """Checks a token: unsecured JWTs (:class:`UnsecuredValidator`) or signed ones
    (``strom.security.jwks.JwksValidator``)."""

    def validate(self, token: str, now_ms: int) -> ValidToken: ...


@dataclass(frozen=True, slots=True)
class UnsecuredValidator:
    """The ``unsecuredValidator*`` options of the listener's OAUTHBEARER JAAS config."""

    principal_claim: str = "sub"
    scope_claim: str = "scope"
    required_scopes: tuple[str, ...] = ()
    clock_skew_ms: int = 0

    @classmethod
    def from_options(cls, options: Mapping[str, str]) -> UnsecuredValidator:
        """ValueError for a bad clock skew."""
        return cls(
            principal_claim=options.get("unsecuredValidatorPrincipalClaimName") or "sub",
            scope_claim=options.get("unsecuredValidatorScopeClaimName") or "scope",
            required_scopes=tuple(options.get("unsecuredValidatorRequiredScope", "").split()),
            clock_skew_ms=int(options.get("unsecuredValidatorAllowableClockSkewMs") or 0),
        )

    def validate(self, token: str, now_ms: int) -> ValidToken:
        parts = token.split(".")
        if len(parts) != 3:
            raise InvalidToken("an unsecured JWS has three parts")
        header, claims = decode_part(parts[0]), decode_part(parts[1])
        if header.get("alg") != "none" or parts[2]:
            raise InvalidToken("Unsecured JWS must have 'none' for an algorithm")
        principal = claims.get(self.principal_claim)
        if not isinstance(principal, str) or not principal.strip():
            raise InvalidToken(f"no principal name in the {self.principal_claim!r} claim")
        expiry = claims.get("exp")
        if not isinstance(expiry, int | float) or isinstance(expiry, bool):
            raise InvalidToken("No expiration time in JWT")
        expiry_ms = int(expiry * 1000)
        if expiry_ms <= now_ms - self.clock_skew_ms:
            raise InvalidToken("the token has expired")
        issued = claims.get("iat")
        if isinstance(issued, int | float) and issued * 1000 > now_ms + self.clock_skew_ms:
            raise InvalidToken("the token was issued in the future")
        scope = claims.get(self.scope_claim, [])
        scopes = set(scope.split() if isinstance(scope, str) else scope or [])
        missing = [s for s in self.required_scopes if s not in scopes]
        if missing:
            raise InvalidToken(
                "the token lacks required scopes",
                status="insufficient_scope",
                scope=" ".join(self.required_scopes),
            )
        return ValidToken(principal, expiry_ms)


def _client_token(message: bytes) -> tuple[str, str]:
    """(authorization id, token) of the client's initial response."""
    text = message.decode("utf-8")
    gs2, sep, rest = text.partition(_SEPARATOR)
    flag, _, authzid = gs2.partition(",")
    if not sep or flag not in ("n", "y") or not rest.endswith(_SEPARATOR * 2):
        raise InvalidToken("invalid OAUTHBEARER client response")
    fields = dict(item.partition("=")[::2] for item in rest.split(_SEPARATOR) if item)
    scheme, _, token = fields.get("auth", "").partition(" ")
    if scheme.lower() != "bearer" or not token:
        raise InvalidToken("no bearer token in the OAUTHBEARER client response")
    return authzid.rstrip(",").removeprefix("a="), token.strip()


class OAuthBearerServer:
    """One OAUTHBEARER exchange on the server (see the module doc)."""

    mechanism: Final = OAUTHBEARER

    def __init__(self, validator: TokenValidator, now_ms: Callable[[], int]) -> None:
        self._validator = validator
        self._now_ms = now_ms
        self._token: ValidToken | None = None
        self._error: str | None = None

    @property
    def complete(self) -> bool:
        return self._token is not None

    @property
    def user(self) -> str:
        if self._token is None:
            raise RuntimeError("OAUTHBEARER authentication is not complete")
        return self._token.principal

    @property
    def credential_expiry_ms(self) -> int | None:
        return None if self._token is None else self._token.expiry_ms

    def evaluate(self, token: bytes) -> bytes:
        if self._error is not None:
            if token == _SEPARATOR.encode():
                raise SaslAuthenticationError(f"Authentication failed: {self._error}")
            raise SaslAuthenticationError("Authentication failed: unexpected OAUTHBEARER message")
        if self._token is not None:
            raise SaslAuthenticationError("Authentication failed: the exchange is complete")
        try:
            authzid, bearer = _client_token(token)
            valid = self._validator.validate(bearer, self._now_ms())
        except (InvalidToken, UnicodeDecodeError) as error:
            status = error.status if isinstance(error, InvalidToken) else "invalid_token"
            answer: dict[str, str] = {"status": status}
            if isinstance(error, InvalidToken) and error.scope is not None:
                answer["scope"] = error.scope
            self._error = str(error)
            return json.dumps(answer, separators=(",", ":")).encode()
        if authzid and authzid != valid.principal:
            raise SaslAuthenticationError(
                f"Authentication failed: Client requested an authorization id ({authzid}) that "
                f"is different from the token's principal name ({valid.principal})"
            )
        self._token = valid
        return b""


def unsecured_token(
    principal: str, *, expiry_s: float, issued_s: float | None = None, scope: str | None = None
) -> str:
    """An unsecured JWT (``alg: none``) for ``principal``, for tests and development."""

    def part(value: Mapping[str, Any]) -> str:
        encoded = base64.urlsafe_b64encode(json.dumps(value).encode()).decode()
        return encoded.rstrip("=")

    claims: dict[str, Any] = {"sub": principal, "exp": expiry_s}
    if issued_s is not None:
        claims["iat"] = issued_s
    if scope is not None:
        claims["scope"] = scope
    return f"{part({'alg': 'none'})}.{part(claims)}."


def oauthbearer_message(token: str) -> bytes:
    """The client's initial response carrying ``token``."""
    return f"n,,{_SEPARATOR}auth=Bearer {token}{_SEPARATOR}{_SEPARATOR}".encode()
