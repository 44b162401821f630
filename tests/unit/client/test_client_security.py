"""The client's SASL login as a generator, against the server's authenticator (no sockets)."""

from __future__ import annotations

from functools import partial

import pytest
from kio.schema.sasl_authenticate.v1.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest

from strom.client.security import AuthenticationFailed, ClientSecurity, sasl_exchange
from strom.security.oauthbearer import OAuthBearerServer, UnsecuredValidator
from strom.security.sasl import PlainServer
from strom.security.sasl_authenticator import SaslAuthenticator
from strom.security.scram import ScramMechanism, ScramServer, credential_from_password
from strom.server.network.sasl_authenticate import authenticate_response
from strom.server.network.sasl_handshake import handshake_response

SHA512 = ScramMechanism.SCRAM_SHA_512
ALICE = credential_from_password(SHA512, "alice-secret")


def server() -> SaslAuthenticator:
    return SaslAuthenticator(
        mechanisms={
            "PLAIN": partial(PlainServer, {"alice": "alice-secret"}),
            "SCRAM-SHA-512": partial(
                ScramServer, SHA512, lambda m, u: ALICE if u == "alice" else None
            ),
            "OAUTHBEARER": partial(
                OAuthBearerServer, UnsecuredValidator(), lambda: 1_700_000_000_000
            ),
        },
        max_reauth_ms=60_000,
    )


def log_in(security: ClientSecurity) -> int:
    """Run the client's exchange against a server authenticator; the session lifetime."""
    authenticator = server()
    exchange = sasl_exchange(security)
    request = next(exchange)
    while True:
        if isinstance(request, SaslHandshakeRequest):
            outcome = authenticator.handshake(request.mechanism, 1)
            response = handshake_response(1, outcome.error, outcome.mechanisms)
        else:
            assert isinstance(request, SaslAuthenticateRequest)
            result = authenticator.authenticate(request.auth_bytes, 1_700_000_000_000)
            response = authenticate_response(
                1, result.error, result.message, result.token, result.session_lifetime_ms
            )
        try:
            request = exchange.send(response)
        except StopIteration as done:
            assert authenticator.authenticated
            return int(done.value)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_logins_succeed_with_the_session_lifetime(mechanism: str) -> None:
    assert log_in(ClientSecurity(None, mechanism, "alice", "alice-secret")) == 60_000


def test_an_unsecured_oauthbearer_token_logs_in() -> None:
    # the token is made from the wall clock, which is past the server's fixed "now"
    assert log_in(ClientSecurity(None, "OAUTHBEARER", "alice")) == 60_000


@pytest.mark.parametrize(
    ("security", "message"),
    [
        (ClientSecurity(None, "PLAIN", "alice", "wrong"), "Invalid username or password"),
        (ClientSecurity(None, "SCRAM-SHA-512", "alice", "wrong"), "invalid credentials"),
        (ClientSecurity(None, "SCRAM-SHA-256", "alice", "x"), "does not enable SASL mechanism"),
    ],
)
def test_failed_logins_raise(security: ClientSecurity, message: str) -> None:
    with pytest.raises(AuthenticationFailed, match=message):
        log_in(security)
