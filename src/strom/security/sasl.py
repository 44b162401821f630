"""SASL mechanisms on the server side: what each one is, and PLAIN.

A mechanism server (Java's ``SaslServer``) takes the client's tokens one at a time and answers
each with a challenge until it is ``complete``; it then names the authenticated user. A wrong
password or an unknown user raises :class:`SaslAuthenticationError`, whose message the client
sees, so it never says which of the two it was.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Mapping
from typing import Final, Protocol

__all__ = [
    "PLAIN",
    "MechanismFactory",
    "PlainServer",
    "SaslAuthenticationError",
    "SaslMechanismServer",
]

PLAIN: Final = "PLAIN"


class SaslAuthenticationError(Exception):
    """Authentication failed; the message goes to the client (SASL_AUTHENTICATION_FAILED)."""


class SaslMechanismServer(Protocol):
    """One authentication exchange of one mechanism."""

    @property
    def mechanism(self) -> str: ...

    @property
    def complete(self) -> bool: ...

    @property
    def user(self) -> str:
        """The authenticated user (once complete)."""
        ...

    @property
    def credential_expiry_ms(self) -> int | None:
        """When the credential expires (OAUTHBEARER's token), None when it does not."""
        ...

    def evaluate(self, token: bytes) -> bytes:
        """The challenge for the client's next token; raises SaslAuthenticationError."""
        ...


MechanismFactory = Callable[[], SaslMechanismServer]
"""Makes the server of one exchange (a connection authenticates, or re-authenticates)."""


class PlainServer:
    """SASL/PLAIN (RFC 4616) against a user -> password table (Kafka's ``PlainSaslServer``)."""

    mechanism: Final = PLAIN
    credential_expiry_ms: Final = None

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self._user: str | None = None

    @property
    def complete(self) -> bool:
        return self._user is not None

    @property
    def user(self) -> str:
        if self._user is None:
            raise RuntimeError("PLAIN authentication is not complete")
        return self._user

    def evaluate(self, token: bytes) -> bytes:
        parts = token.decode("utf-8", "replace").split("\0")
        if len(parts) != 3:
            raise SaslAuthenticationError(
                f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}"
            )
        authorization_id, username, password = parts
        if not username:
            raise SaslAuthenticationError("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationError("Authentication failed: password not specified")
        expected = self._users.get(username)
        matches = hmac.compare_digest(password.encode(), (expected or "").encode())
        if expected is None or not matches:
            raise SaslAuthenticationError("Authentication failed: Invalid username or password")
        if authorization_id and authorization_id != username:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is different "
                "from username"
            )
        self._user = username
        return b""
