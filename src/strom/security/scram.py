"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677): credentials and the server's side.

Credentials are Kafka's: a salt, the iteration count, ``StoredKey = H(HMAC(SaltedPassword,
"Client Key"))`` and ``ServerKey = HMAC(SaltedPassword, "Server Key")``; the password itself
is never kept. :class:`ScramServer` is Kafka's ``ScramSaslServer``: client-first message,
server-first (the salt, the iterations and the server's half of the nonce), client-final with
the proof, server-final with the server's signature. Channel binding and delegation tokens are
not supported. A malformed message, a message out of order, an unknown user or a wrong proof
all fail alike, so a client cannot tell which.
"""

from __future__ import annotations

import base64
import enum
import hashlib
import hmac
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from strom.security.sasl import SaslAuthenticationError

__all__ = [
    "MAX_ITERATIONS",
    "ScramClient",
    "ScramCredential",
    "ScramMechanism",
    "ScramServer",
    "ScramUser",
    "credential_from_password",
    "credential_from_salted_password",
    "parse_scram_user",
]

MAX_ITERATIONS: Final = 16384


class ScramMechanism(enum.IntEnum):
    """Kafka's ``ScramMechanism`` type codes (as in UserScramCredentialRecord)."""

    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2

    @property
    def mechanism_name(self) -> str:
        return self.name.replace("_", "-")

    @property
    def hash_name(self) -> str:
        return "sha256" if self is ScramMechanism.SCRAM_SHA_256 else "sha512"

    @property
    def min_iterations(self) -> int:
        return 4096

    @classmethod
    def from_name(cls, name: str) -> ScramMechanism | None:
        return next((m for m in cls if m.mechanism_name == name.upper()), None)


@dataclass(frozen=True, slots=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def __repr__(self) -> str:
        return f"ScramCredential(iterations={self.iterations}, keys hidden)"


def _hmac(mechanism: ScramMechanism, key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, mechanism.hash_name).digest()


def _hash(mechanism: ScramMechanism, data: bytes) -> bytes:
    return hashlib.new(mechanism.hash_name, data).digest()


def salted_password(
    mechanism: ScramMechanism, password: str, salt: bytes, iterations: int
) -> bytes:
    """RFC 5802's Hi(): PBKDF2 with the mechanism's HMAC."""
    return hashlib.pbkdf2_hmac(mechanism.hash_name, password.encode(), salt, iterations)


def credential_from_salted_password(
    mechanism: ScramMechanism, salted: bytes, salt: bytes, iterations: int
) -> ScramCredential:
    """What AlterUserScramCredentials' salted password becomes (Kafka's ScramFormatter)."""
    client_key = _hmac(mechanism, salted, b"Client Key")
    return ScramCredential(
        salt=salt,
        stored_key=_hash(mechanism, client_key),
        server_key=_hmac(mechanism, salted, b"Server Key"),
        iterations=iterations,
    )


def credential_from_password(
    mechanism: ScramMechanism, password: str, *, iterations: int = 4096, salt: bytes | None = None
) -> ScramCredential:
    salt = salt if salt is not None else secrets.token_bytes(32)
    salted = salted_password(mechanism, password, salt, iterations)
    return credential_from_salted_password(mechanism, salted, salt, iterations)


CredentialLookup = Callable[[ScramMechanism, str], ScramCredential | None]
"""The stored credential of a user for a mechanism (the metadata image's), or None."""


def _attributes(text: str) -> list[tuple[str, str]]:
    pairs = []
    for item in text.split(","):
        name, sep, value = item.partition("=")
        if not sep or len(name) != 1:
            raise ValueError(f"invalid SCRAM attribute {item!r}")
        pairs.append((name, value))
    return pairs


def _sasl_name(value: str) -> str:
    """RFC 5802's saslname: ``=2C`` is a comma, ``=3D`` an equals sign, nothing else escaped."""
    if "=" in value.replace("=2C", "").replace("=3D", ""):
        raise ValueError("invalid escape in a SCRAM user name")
    return value.replace("=2C", ",").replace("=3D", "=")


class _Step(enum.Enum):
    CLIENT_FIRST = "client-first"
    CLIENT_FINAL = "client-final"
    COMPLETE = "complete"
    FAILED = "failed"


class ScramServer:
    """One SCRAM exchange on the server (see the module doc)."""

    credential_expiry_ms: Final = None

    def __init__(
        self,
        mechanism: ScramMechanism,
        credentials: CredentialLookup,
        *,
        nonce: Callable[[], str] = lambda: secrets.token_urlsafe(24),
    ) -> None:
        self._scram = mechanism
        self._credentials = credentials
        self._nonce = nonce
        self._step = _Step.CLIENT_FIRST
        self._user: str | None = None
        self._credential: ScramCredential | None = None
        self._client_first_bare = ""
        self._server_first = ""
        self._combined_nonce = ""

    @property
    def mechanism(self) -> str:
        return self._scram.mechanism_name

    @property
    def complete(self) -> bool:
        return self._step is _Step.COMPLETE

    @property
    def user(self) -> str:
        if self._step is not _Step.COMPLETE or self._user is None:
            raise RuntimeError("SCRAM authentication is not complete")
        return self._user

    def evaluate(self, token: bytes) -> bytes:
        step = self._step
        self._step = _Step.FAILED  # until this step succeeds
        try:
            message = token.decode("utf-8")
            if step is _Step.CLIENT_FIRST:
                answer = self._client_first(message)
                self._step = _Step.CLIENT_FINAL
            elif step is _Step.CLIENT_FINAL:
                answer = self._client_final(message)
                self._step = _Step.COMPLETE
            else:
                raise ValueError(f"unexpected SCRAM message after the exchange was {step.value}")
        except (ValueError, UnicodeDecodeError) as error:
            raise SaslAuthenticationError(self._failure()) from error
        return answer.encode()

    def _failure(self) -> str:
        return (
            "Authentication failed during authentication due to invalid credentials with "
            f"SASL mechanism {self.mechanism}"
        )

    def _client_first(self, message: str) -> str:
        flag, sep1, rest = message.partition(",")
        authzid, sep2, bare = rest.partition(",")
        if not sep1 or not sep2 or flag not in ("n", "y"):
            raise ValueError("invalid gs2 header (channel binding is not supported)")
        attributes = _attributes(bare)
        if len(attributes) < 2 or attributes[0][0] != "n" or attributes[1][0] != "r":
            raise ValueError("invalid client-first message")
        user, client_nonce = _sasl_name(attributes[0][1]), attributes[1][1]
        extensions = dict(attributes[2:])
        if extensions.get("t") is not None or "tokenauth" in bare:
            raise ValueError("delegation tokens are not supported")
        if authzid and _sasl_name(authzid.removeprefix("a=")) != user:
            raise ValueError("authorization id differs from the user name")
        credential = self._credentials(self._scram, user)
        if credential is None or credential.iterations < self._scram.min_iterations:
            raise ValueError("no usable credential")
        self._user, self._credential = user, credential
        self._client_first_bare = bare
        self._combined_nonce = client_nonce + self._nonce()
        salt = base64.b64encode(credential.salt).decode()
        self._server_first = f"r={self._combined_nonce},s={salt},i={credential.iterations}"
        return self._server_first

    def _client_final(self, message: str) -> str:
        credential = self._credential
        assert credential is not None
        without_proof, sep, proof_text = message.rpartition(",p=")
        if not sep:
            raise ValueError("client-final message without a proof")
        attributes = dict(_attributes(without_proof))
        # Kafka checks only that the nonce ends with the server's (librdkafka before 2.0 sends
        # the client's half twice) and leaves the channel binding to the proof, which covers it.
        if "c" not in attributes or not attributes.get("r", "").endswith(self._combined_nonce):
            raise ValueError("invalid client nonce in the final client message")
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        signature = _hmac(self._scram, credential.stored_key, auth_message)
        proof = base64.b64decode(proof_text, validate=True)
        if len(proof) != len(signature):
            raise ValueError("proof of the wrong length")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(_hash(self._scram, client_key), credential.stored_key):
            raise ValueError("invalid proof")
        server_signature = _hmac(self._scram, credential.server_key, auth_message)
        return "v=" + base64.b64encode(server_signature).decode()


@dataclass(frozen=True, slots=True)
class ScramUser:
    """One ``--add-scram`` entry: ``SCRAM-SHA-256=[name=alice,password=alice-secret]``."""

    mechanism: ScramMechanism
    name: str
    password: str
    iterations: int = 4096

    def __repr__(self) -> str:
        return f"ScramUser({self.mechanism.mechanism_name}, name={self.name!r})"

    def credential(self) -> ScramCredential:
        return credential_from_password(self.mechanism, self.password, iterations=self.iterations)


def parse_scram_user(text: str) -> ScramUser:
    """Kafka's ``kafka-storage.sh format --add-scram`` syntax (``iterations=`` optional, quotes
    around values allowed); ValueError saying what is wrong."""
    mechanism_name, sep, rest = text.strip().partition("=")
    mechanism = ScramMechanism.from_name(mechanism_name)
    if mechanism is None:
        raise ValueError(f"unknown SCRAM mechanism {mechanism_name!r} (SCRAM-SHA-256 or -512)")
    if not sep or not rest.startswith("[") or not rest.endswith("]"):
        raise ValueError(f"expected {mechanism_name}=[name=...,password=...], got {text!r}")
    fields: dict[str, str] = {}
    for item in rest[1:-1].split(","):
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"expected key=value, got {item!r}")
        fields[key.strip()] = value.strip().strip('"')
    unknown = set(fields) - {"name", "password", "iterations"}
    if unknown or not fields.get("name") or "password" not in fields:
        raise ValueError(f"expected name=, password= and optionally iterations=, got {text!r}")
    iterations = int(fields.get("iterations", "4096"))
    if not mechanism.min_iterations <= iterations <= MAX_ITERATIONS:
        raise ValueError(f"iterations must lie in [4096, {MAX_ITERATIONS}], got {iterations}")
    return ScramUser(mechanism, fields["name"], fields["password"], iterations)


class ScramClient:
    """The client's side of one SCRAM exchange (a broker logging in to another node)."""

    def __init__(
        self,
        mechanism: ScramMechanism,
        username: str,
        password: str,
        *,
        nonce: Callable[[], str] = lambda: secrets.token_urlsafe(24),
    ) -> None:
        self._scram = mechanism
        self._password = password
        self._nonce = nonce()
        escaped = username.replace("=", "=3D").replace(",", "=2C")
        self._client_first_bare = f"n={escaped},r={self._nonce}"
        self._server_signature: bytes | None = None

    def first_message(self) -> bytes:
        return f"n,,{self._client_first_bare}".encode()

    def final_message(self, server_first: bytes) -> bytes:
        """The proof, from the server's salt, iterations and nonce (ValueError if they are
        unacceptable)."""
        text = server_first.decode("utf-8")
        attributes = dict(_attributes(text))
        nonce, salt_text, iterations = (
            attributes.get("r", ""),
            attributes.get("s"),
            attributes.get("i"),
        )
        if not nonce.startswith(self._nonce) or salt_text is None or iterations is None:
            raise ValueError("invalid SCRAM server-first message")
        if int(iterations) < self._scram.min_iterations:
            raise ValueError(f"the server asks for only {iterations} iterations")
        salted = salted_password(
            self._scram, self._password, base64.b64decode(salt_text), int(iterations)
        )
        client_key = _hmac(self._scram, salted, b"Client Key")
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self._client_first_bare},{text},{without_proof}".encode()
        signature = _hmac(self._scram, _hash(self._scram, client_key), auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        server_key = _hmac(self._scram, salted, b"Server Key")
        self._server_signature = _hmac(self._scram, server_key, auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        """Check the server's signature (ValueError: the server does not know the password)."""
        expected = self._server_signature
        text = server_final.decode("utf-8", "replace")
        if expected is None or text != "v=" + base64.b64encode(expected).decode():
            raise ValueError(f"invalid SCRAM server-final message {text!r}")
