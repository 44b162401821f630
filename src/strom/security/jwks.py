"""OAUTHBEARER tokens checked against a JSON Web Key Set, as Kafka's
``OAuthBearerValidatorCallbackHandler`` with ``sasl.oauthbearer.jwks.endpoint.url``.

A token is a JWS signed with RS256 by a key of the set (its ``kid``, or the set's only key);
``exp`` is required and must not have passed, ``iat`` and ``nbf`` must not be in the future
(each within ``sasl.oauthbearer.clock.skew.seconds``); with ``sasl.oauthbearer.expected.audience``
the ``aud`` claim must name one of them, with ``sasl.oauthbearer.expected.issuer`` ``iss`` must
be it. The principal is the ``sasl.oauthbearer.sub.claim.name`` claim (``sub``).

The set is fetched from its URL (``https:``, ``http:`` or ``file:``) when the listener starts
and again every ``sasl.oauthbearer.jwks.endpoint.refresh.ms`` (:meth:`JwksKeys.refresh`);
a failed refresh keeps the keys it had.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import threading
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from strom.security.oauthbearer import InvalidToken, ValidToken, decode_part

__all__ = ["JwksError", "JwksKeys", "JwksValidator", "JwtChecks"]

log = logging.getLogger(__name__)


class JwksError(ValueError):
    """The key set cannot be fetched or read."""


def _number(text: str) -> int:
    return int.from_bytes(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)), "big")


def parse_jwks(document: bytes) -> dict[str | None, rsa.RSAPublicKey]:
    """The RSA signing keys of a JWKS document, by ``kid``."""
    try:
        keys = json.loads(document)["keys"]
        found = {
            key.get("kid"): rsa.RSAPublicNumbers(_number(key["e"]), _number(key["n"])).public_key()
            for key in keys
            if key.get("kty") == "RSA" and key.get("use", "sig") == "sig"
        }
    except (ValueError, KeyError, TypeError, binascii.Error) as error:
        raise JwksError(f"not a JSON Web Key Set: {error}") from None
    if not found:
        raise JwksError("the JSON Web Key Set has no RSA signing key")
    return found


class JwksKeys:
    """The keys of one JWKS URL; :meth:`refresh` fetches them (any thread)."""

    def __init__(self, url: str, *, timeout_s: float = 10.0) -> None:
        self.url = url
        self._timeout_s = timeout_s
        self._keys: dict[str | None, rsa.RSAPublicKey] = {}
        self._lock = threading.Lock()

    def refresh(self) -> None:
        """Fetch the set again (JwksError when it cannot be fetched or read)."""
        try:
            with urllib.request.urlopen(self.url, timeout=self._timeout_s) as answer:
                document = answer.read()
        except OSError as error:
            raise JwksError(f"cannot fetch {self.url}: {error}") from None
        keys = parse_jwks(document)
        with self._lock:
            self._keys = keys

    def refresh_every(self, interval_s: float) -> None:
        """Refresh for ever (a daemon thread's loop); failures are logged."""
        while True:
            time.sleep(interval_s)
            try:
                self.refresh()
            except JwksError as error:
                log.warning("keeping the JWKS keys: %s", error)

    def key(self, kid: str | None) -> rsa.RSAPublicKey | None:
        with self._lock:
            if kid is None and len(self._keys) == 1:
                return next(iter(self._keys.values()))
            return self._keys.get(kid)


@dataclass(frozen=True, slots=True)
class JwtChecks:
    """The claims checks of Kafka's ``sasl.oauthbearer.*`` settings."""

    principal_claim: str = "sub"
    audiences: tuple[str, ...] = ()
    issuer: str | None = None
    clock_skew_ms: int = 30_000


class JwksValidator:
    """Validates RS256 JWTs with the keys of a :class:`JwksKeys`."""

    def __init__(self, keys: JwksKeys, checks: JwtChecks) -> None:
        self._keys = keys
        self._checks = checks

    def validate(self, token: str, now_ms: int) -> ValidToken:
        parts = token.split(".")
        if len(parts) != 3:
            raise InvalidToken("a JWS has three parts")
        header, claims = decode_part(parts[0]), decode_part(parts[1])
        if header.get("alg") != "RS256":
            raise InvalidToken(f"the token's algorithm {header.get('alg')!r} is not RS256")
        key = self._keys.key(header.get("kid"))
        if key is None:
            raise InvalidToken(f"no key {header.get('kid')!r} in the JSON Web Key Set")
        try:
            signature = base64.urlsafe_b64decode(parts[2] + "=" * (-len(parts[2]) % 4))
            key.verify(
                signature, f"{parts[0]}.{parts[1]}".encode(), padding.PKCS1v15(), hashes.SHA256()
            )
        except (InvalidSignature, binascii.Error, ValueError):
            raise InvalidToken("the token's signature is not valid") from None
        return ValidToken(self._principal(claims), self._expiry_ms(claims, now_ms))

    def _expiry_ms(self, claims: Mapping[str, Any], now_ms: int) -> int:
        skew = self._checks.clock_skew_ms
        expiry = _seconds(claims, "exp")
        if expiry is None:
            raise InvalidToken("No expiration time in JWT")
        if expiry * 1000 <= now_ms - skew:
            raise InvalidToken("the token has expired")
        for name in ("iat", "nbf"):
            at = _seconds(claims, name)
            if at is not None and at * 1000 > now_ms + skew:
                raise InvalidToken(f"the token's {name!r} is in the future")
        checks = self._checks
        if checks.issuer is not None and claims.get("iss") != checks.issuer:
            raise InvalidToken(f"the token's issuer {claims.get('iss')!r} is not expected")
        if checks.audiences:
            audience = claims.get("aud")
            named = [audience] if isinstance(audience, str) else list(audience or [])
            if not set(named) & set(checks.audiences):
                raise InvalidToken(f"the token's audience {audience!r} is not expected")
        return int(expiry * 1000)

    def _principal(self, claims: Mapping[str, Any]) -> str:
        principal = claims.get(self._checks.principal_claim)
        if not isinstance(principal, str) or not principal.strip():
            raise InvalidToken(f"no principal name in the {self._checks.principal_claim!r} claim")
        return principal


def _seconds(claims: Mapping[str, Any], name: str) -> float | None:
    value = claims.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
