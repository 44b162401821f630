"""OAUTHBEARER with unsecured JWTs, as Kafka's server and unsecured validator treat them."""

from __future__ import annotations

import base64
import json

import pytest

from strom.security.oauthbearer import (
    OAuthBearerServer,
    UnsecuredValidator,
    oauthbearer_message,
    unsecured_token,
)
from strom.security.sasl import SaslAuthenticationError

NOW_MS = 1_700_000_000_000
NOW_S = NOW_MS // 1000


def server(**options: str) -> OAuthBearerServer:
    return OAuthBearerServer(UnsecuredValidator.from_options(options), lambda: NOW_MS)


def test_a_valid_token_names_the_user_and_its_expiry() -> None:
    scram = server()
    assert scram.evaluate(oauthbearer_message(unsecured_token("alice", expiry_s=NOW_S + 60))) == b""
    assert scram.complete and scram.user == "alice"
    assert scram.credential_expiry_ms == NOW_MS + 60_000


def refused(oauth: OAuthBearerServer, message: bytes) -> dict[str, str]:
    answer: dict[str, str] = json.loads(oauth.evaluate(message))
    with pytest.raises(SaslAuthenticationError, match="Authentication failed"):
        oauth.evaluate(b"\x01")
    return answer


def test_an_expired_token_gets_a_json_error_then_fails() -> None:
    oauth = server()
    token = unsecured_token("alice", expiry_s=NOW_S - 1)
    assert refused(oauth, oauthbearer_message(token)) == {"status": "invalid_token"}


def test_clock_skew_is_allowed() -> None:
    oauth = server(unsecuredValidatorAllowableClockSkewMs="5000")
    oauth.evaluate(oauthbearer_message(unsecured_token("alice", expiry_s=NOW_S - 1)))
    assert oauth.complete


def test_required_scopes() -> None:
    options = {"unsecuredValidatorRequiredScope": "produce consume"}
    token = unsecured_token("alice", expiry_s=NOW_S + 60, scope="produce")
    assert refused(server(**options), oauthbearer_message(token)) == {
        "status": "insufficient_scope",
        "scope": "produce consume",
    }
    token = unsecured_token("alice", expiry_s=NOW_S + 60, scope="consume produce other")
    oauth = server(**options)
    oauth.evaluate(oauthbearer_message(token))
    assert oauth.complete


def part(value: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")


@pytest.mark.parametrize(
    "message",
    [
        b"garbage",
        b"n,,\x01auth=Basic abc\x01\x01",
        oauthbearer_message("not.a.jwt"),
        oauthbearer_message(f"{part({'alg': 'HS256'})}.{part({'sub': 'a', 'exp': NOW_S + 9})}."),
        oauthbearer_message(f"{part({'alg': 'none'})}.{part({'exp': NOW_S + 9})}."),
        oauthbearer_message(f"{part({'alg': 'none'})}.{part({'sub': 'a'})}."),
        oauthbearer_message(unsecured_token("a", expiry_s=NOW_S + 9, issued_s=NOW_S + 5)),
        b"\xff\xfe",
    ],
)
def test_bad_messages_and_tokens_are_refused(message: bytes) -> None:
    assert refused(server(), message)["status"] == "invalid_token"


def test_another_authorization_id_is_refused() -> None:
    token = unsecured_token("alice", expiry_s=NOW_S + 60)
    message = f"n,a=bob,\x01auth=Bearer {token}\x01\x01".encode()
    with pytest.raises(SaslAuthenticationError, match="different from the token's principal"):
        server().evaluate(message)


def test_a_custom_principal_claim() -> None:
    token = f"{part({'alg': 'none'})}.{part({'client_id': 'svc', 'exp': NOW_S + 9})}."
    oauth = server(unsecuredValidatorPrincipalClaimName="client_id")
    oauth.evaluate(oauthbearer_message(token))
    assert oauth.user == "svc"
