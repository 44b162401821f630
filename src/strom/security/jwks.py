"""OAUTHBEARER tokens checked against a JSON Web Key Set, as Kafka's
``OAuthBearerValidatorCallbackHandler`` with ``sasl.oauthbearer.jwks.endpoint.url``.

A token is a JWS signed by a key of the set (its ``kid``, or the set's only key of the
algorithm's type) with one of ``strom.security.jws.ALGORITHMS`` (RS256, ES256, ...); ``exp``
and ``iat`` are required, ``exp`` must not have passed, ``iat`` and ``nbf`` must not be in the
future (each within ``sasl.oauthbearer.clock.skew.seconds``); with
``sasl.oauthbearer.expected.audience`` the ``aud`` claim must name one of them, with
``sasl.oauthbearer.expected.issuer`` ``iss`` must be it. The principal is the
``sasl.oauthbearer.sub.claim.name`` claim (``sub``); the ``sasl.oauthbearer.scope.claim.name``
claim (``scope``), when there is one, is a scope or a list of distinct scopes, none blank.

The set (:class:`JwksKeys`) is fetched from its URL (``https:``, ``http:`` or ``file:``) when the
listener starts and again every ``sasl.oauthbearer.jwks.endpoint.refresh.ms``, as Kafka's
``RefreshingHttpsJwks``: a refresh that fails is tried again after
``sasl.oauthbearer.jwks.endpoint.retry.backoff.ms``, doubling, for at most
``sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms``, and one that still fails keeps the
keys. A token naming a key the set lacks is refused, and the set is fetched again at once in
the background (a key rotated in before the next refresh), at most once a minute for one
``kid`` (16 remembered) and, strom's addition, once a second for any: a stream of bad tokens
cannot make the broker hammer the endpoint.
"""

from __future__ import annotations

import binascii
import json
import logging
import math
import threading
import time
import urllib.request
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from strom.security.jws import ALGORITHMS, Jwk, PublicKey, b64decode, parse_jwk, verify
from strom.security.oauthbearer import InvalidToken, ValidToken, decode_part

__all__ = ["Backoff", "JwksError", "JwksKeys", "JwksValidator", "JwtChecks", "parse_jwks"]

log = logging.getLogger(__name__)

MISSING_KID_RETRY_S: Final = 60.0
"""A token naming the same unknown ``kid`` asks for a refresh at most this often (Kafka's
``MISSING_KEY_ID_CACHE_IN_FLIGHT_MS``)."""
_MISSING_KIDS: Final = 16
_MAX_KID_LENGTH: Final = 1000
EXPEDITED_REFRESH_INTERVAL_S: Final = 1.0
"""At most one refresh for unknown ``kid``s this often, whatever the ``kid``s."""


class JwksError(ValueError):
    """The key set cannot be fetched or read."""


def parse_jwks(document: bytes) -> tuple[Jwk, ...]:
    """The signing keys (RSA, EC) of a JWKS document."""
    try:
        keys = json.loads(document)["keys"]
        found = tuple(jwk for fields in keys if (jwk := parse_jwk(fields)) is not None)
    except (ValueError, KeyError, TypeError, binascii.Error) as error:
        raise JwksError(f"not a JSON Web Key Set: {error}") from None
    if not found:
        raise JwksError("the JSON Web Key Set has no RSA or EC signing key")
    return found


@dataclass(frozen=True, slots=True)
class Backoff:
    """``sasl.oauthbearer.jwks.endpoint.retry.backoff.ms`` and ``.max.ms``, in seconds."""

    initial_s: float = 0.1
    max_s: float = 10.0


class JwksKeys:
    """The keys of one JWKS URL. :meth:`fetch` and :meth:`refresh` fetch them (any thread);
    :meth:`refresh_every` is the refresh thread's loop, which :meth:`expedite` wakes."""

    def __init__(
        self,
        url: str,
        *,
        timeout_s: float = 10.0,
        backoff: Backoff = Backoff(),
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.url = url
        self._timeout_s = timeout_s
        self._backoff = backoff
        self._clock = clock
        self._sleep = sleep
        self._keys: tuple[Jwk, ...] = ()
        self._lock = threading.Lock()
        self._missing: OrderedDict[str, float] = OrderedDict()
        """Unknown kid -> when a token naming it may ask for a refresh again."""
        self._next_expedited = -math.inf
        self._wake = threading.Event()

    def fetch(self) -> None:
        """Fetch the set once (JwksError when it cannot be fetched or read)."""
        try:
            with urllib.request.urlopen(self.url, timeout=self._timeout_s) as answer:
                document = answer.read()
        except OSError as error:
            raise JwksError(f"cannot fetch {self.url}: {error}") from None
        keys = parse_jwks(document)
        with self._lock:
            self._keys = keys
            for jwk in keys:
                if jwk.kid is not None:
                    self._missing.pop(jwk.kid, None)

    def refresh(self) -> None:
        """Fetch the set, trying again with a doubling backoff for at most the backoff's
        maximum (Kafka's ``Retry``); the first error when no attempt succeeded."""
        end = self._clock() + self._backoff.max_s
        attempt = 0
        first: JwksError | None = None
        while True:
            attempt += 1
            try:
                self.fetch()
                return
            except JwksError as error:
                first = first or error
                wait = min(self._backoff.initial_s * 2 ** (attempt - 1), end - self._clock())
                if wait <= 0:
                    raise first from None
                log.warning(
                    "JWKS attempt %d failed, trying again in %.3g s: %s", attempt, wait, error
                )
                self._sleep(wait)

    def refresh_every(self, interval_s: float) -> None:
        """Refresh every ``interval_s``, and when :meth:`expedite` asks (a daemon thread's
        loop); a refresh that fails keeps the keys, with a log line."""
        due = self._clock() + interval_s
        while True:
            expedited = self._wake.wait(timeout=max(0.0, due - self._clock()))
            self._wake.clear()
            if not expedited:
                due += interval_s
            try:
                self.refresh()
            except JwksError as error:
                log.warning("keeping the JWKS keys: %s", error)

    def key(self, kid: str | None, algorithm: str) -> PublicKey | None:
        """The key of ``kid`` that suits ``algorithm``; without a kid, the set's only one."""
        with self._lock:
            suitable = [jwk for jwk in self._keys if jwk.suits(algorithm)]
        if kid is None:
            return suitable[0].key if len(suitable) == 1 else None
        return next((jwk.key for jwk in suitable if jwk.kid == kid), None)

    def expedite(self, kid: str) -> bool:
        """A token named ``kid``, which the set lacks: wake the refresh thread, unless ``kid``
        asked within :data:`MISSING_KID_RETRY_S`, another did within
        :data:`EXPEDITED_REFRESH_INTERVAL_S`, or it is too long to be one. True when it woke."""
        if len(kid) > _MAX_KID_LENGTH:
            return False
        now = self._clock()
        with self._lock:
            if self._missing.get(kid, -math.inf) > now or self._next_expedited > now:
                return False
            self._missing[kid] = now + MISSING_KID_RETRY_S
            self._missing.move_to_end(kid)
            while len(self._missing) > _MISSING_KIDS:
                self._missing.popitem(last=False)
            self._next_expedited = now + EXPEDITED_REFRESH_INTERVAL_S
        self._wake.set()
        return True


@dataclass(frozen=True, slots=True)
class JwtChecks:
    """The claims checks of Kafka's ``sasl.oauthbearer.*`` settings."""

    principal_claim: str = "sub"
    scope_claim: str = "scope"
    audiences: tuple[str, ...] = ()
    issuer: str | None = None
    clock_skew_ms: int = 30_000


class JwksValidator:
    """Validates signed JWTs with the keys of a :class:`JwksKeys`."""

    def __init__(self, keys: JwksKeys, checks: JwtChecks) -> None:
        self._keys = keys
        self._checks = checks

    def validate(self, token: str, now_ms: int) -> ValidToken:
        parts = token.split(".")
        if len(parts) != 3:
            raise InvalidToken("a JWS has three parts")
        header, claims = decode_part(parts[0]), decode_part(parts[1])
        algorithm, kid = header.get("alg"), header.get("kid")
        if algorithm not in ALGORITHMS:
            raise InvalidToken(f"the token's algorithm {algorithm!r} is not accepted")
        if kid is not None and not isinstance(kid, str):
            raise InvalidToken("the token's kid is not a string")
        key = self._keys.key(kid, algorithm)
        if key is None:
            if kid is not None and self._keys.expedite(kid):
                log.info("no key %r in %s: fetching the set again", kid[:100], self._keys.url)
            raise InvalidToken(f"no {algorithm} key {kid!r} in the JSON Web Key Set")
        try:
            signature = b64decode(parts[2])
        except (binascii.Error, ValueError):
            signature = b""
        if not verify(algorithm, key, f"{parts[0]}.{parts[1]}".encode(), signature):
            raise InvalidToken("the token's signature is not valid")
        _check_scope(claims, self._checks.scope_claim)
        return ValidToken(self._principal(claims), self._expiry_ms(claims, now_ms))

    def _expiry_ms(self, claims: Mapping[str, Any], now_ms: int) -> int:
        skew = self._checks.clock_skew_ms
        expiry = _seconds(claims, "exp")
        if expiry is None:
            raise InvalidToken("No expiration time in JWT")
        if expiry * 1000 <= now_ms - skew:
            raise InvalidToken("the token has expired")
        if _seconds(claims, "iat") is None:
            raise InvalidToken("No Issued At (iat) claim present")
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


def _check_scope(claims: Mapping[str, Any], name: str) -> None:
    """Kafka's ``ClaimValidationUtils.validateScopes``: a scope, or a list of distinct ones,
    none blank (another type of value counts as no scope)."""
    value = claims.get(name)
    scopes = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    seen: set[str] = set()
    for scope in scopes:
        if not isinstance(scope, str) or not scope.strip():
            raise InvalidToken(f"the token's {name!r} claim holds an empty or non-string scope")
        if scope.strip() in seen:
            raise InvalidToken(f"the token's {name!r} claim names {scope.strip()!r} twice")
        seen.add(scope.strip())


def _seconds(claims: Mapping[str, Any], name: str) -> float | None:
    value = claims.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)
