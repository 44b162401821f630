"""The SASL server state machine with PLAIN (Kafka's SaslServerAuthenticator semantics)."""

from __future__ import annotations

from functools import partial

from strom.common import ErrorCode
from strom.security.principal import KafkaPrincipal
from strom.security.sasl import PlainServer
from strom.security.sasl_authenticator import SaslAuthenticator, SaslState

USERS = {"alice": "alice-secret", "bob": "bob-secret"}


def authenticator(max_reauth_ms: int = 0) -> SaslAuthenticator:
    return SaslAuthenticator(
        mechanisms={"PLAIN": partial(PlainServer, USERS)}, max_reauth_ms=max_reauth_ms
    )


def plain(user: str, password: str, authzid: str = "") -> bytes:
    return f"{authzid}\0{user}\0{password}".encode()


def test_handshake_then_plain_authenticates() -> None:
    auth = authenticator()
    assert auth.refusal("ApiVersions", 0) is None
    outcome = auth.handshake("PLAIN", 1)
    assert (outcome.error, outcome.mechanisms, outcome.close) == (ErrorCode.none, ("PLAIN",), False)
    result = auth.authenticate(plain("alice", "alice-secret"), 0)
    assert result.error is ErrorCode.none and result.session_lifetime_ms == 0
    assert auth.authenticated and auth.principal == KafkaPrincipal.user("alice")
    assert auth.refusal("Produce", 10**12) is None


def test_handshake_v0_expects_bare_tokens() -> None:
    auth = authenticator()
    auth.handshake("PLAIN", 0)
    assert auth.expects_raw_token
    auth.authenticate(plain("bob", "bob-secret"), 0)
    assert (auth.expects_raw_token, auth.authenticated) == (False, True)


def test_wrong_password_and_unknown_user_fail_alike() -> None:
    for token in (plain("alice", "nope"), plain("mallory", "x")):
        auth = authenticator()
        auth.handshake("PLAIN", 1)
        result = auth.authenticate(token, 0)
        assert result.error is ErrorCode.sasl_authentication_failed and result.close
        assert result.message == "Authentication failed: Invalid username or password"
        assert auth.state is SaslState.FAILED


def test_malformed_plain_tokens() -> None:
    for token, message in (
        (b"garbage", "expected 3 tokens, got 1"),
        (plain("", "x"), "username not specified"),
        (plain("alice", ""), "password not specified"),
        (plain("alice", "alice-secret", authzid="bob"), "different from username"),
    ):
        auth = authenticator()
        auth.handshake("PLAIN", 1)
        result = auth.authenticate(token, 0)
        assert result.message is not None and message in result.message


def test_unknown_mechanism_is_unsupported() -> None:
    auth = authenticator()
    outcome = auth.handshake("GSSAPI", 1)
    assert outcome.error is ErrorCode.unsupported_sasl_mechanism and outcome.close
    assert outcome.mechanisms == ("PLAIN",)


def test_requests_before_authentication_are_refused() -> None:
    auth = authenticator()
    assert (
        auth.refusal("Metadata", 0)
        == "unexpected Kafka request of type Metadata during SASL handshake"
    )
    auth = authenticator()
    result = auth.authenticate(plain("alice", "alice-secret"), 0)
    assert result.error is ErrorCode.illegal_sasl_state and result.close
    auth = authenticator()
    auth.handshake("PLAIN", 1)
    assert auth.refusal("ApiVersions", 0) is not None


def test_session_lifetime_and_reauthentication() -> None:
    auth = authenticator(max_reauth_ms=1000)
    auth.handshake("PLAIN", 1)
    assert auth.authenticate(plain("alice", "alice-secret"), 5000).session_lifetime_ms == 1000
    assert auth.refusal("Fetch", 5999) is None
    assert auth.handshake("PLAIN", 1).error is ErrorCode.none
    assert auth.authenticate(plain("alice", "alice-secret"), 5900).session_lifetime_ms == 1000
    assert auth.refusal("Fetch", 6800) is None
    assert auth.refusal("Fetch", 6900) == "the SASL session expired without re-authentication"


def test_reauthentication_keeps_the_principal_and_mechanism() -> None:
    auth = authenticator(max_reauth_ms=1000)
    auth.handshake("PLAIN", 1)
    auth.authenticate(plain("alice", "alice-secret"), 0)
    auth.handshake("PLAIN", 1)
    result = auth.authenticate(plain("bob", "bob-secret"), 10)
    assert result.error is ErrorCode.sasl_authentication_failed
    assert result.message is not None and "Cannot change principals" in result.message
    auth = authenticator(max_reauth_ms=1000)
    auth.handshake("PLAIN", 1)
    auth.authenticate(plain("alice", "alice-secret"), 0)
    assert auth.handshake("OTHER", 1).close
