"""SCRAM's server side against RFC 7677's example exchange, and its failures."""

from __future__ import annotations

import base64

import pytest

from strom.security.sasl import SaslAuthenticationError
from strom.security.scram import (
    ScramClient,
    ScramCredential,
    ScramMechanism,
    ScramServer,
    credential_from_password,
    parse_scram_user,
)

SHA256 = ScramMechanism.SCRAM_SHA_256
SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)


def server(credential: ScramCredential | None = None) -> ScramServer:
    stored = credential or credential_from_password(SHA256, "pencil", salt=SALT)
    return ScramServer(
        SHA256,
        lambda mechanism, user: stored if user == "user" else None,
        nonce=lambda: SERVER_NONCE,
    )


def test_the_rfc_7677_exchange() -> None:
    scram = server()
    first = scram.evaluate(CLIENT_FIRST)
    assert first == (
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    assert not scram.complete
    assert scram.evaluate(CLIENT_FINAL) == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert scram.user == "user"  # raises unless complete


def test_a_wrong_password_fails() -> None:
    scram = server(credential_from_password(SHA256, "not pencil", salt=SALT))
    scram.evaluate(CLIENT_FIRST)
    with pytest.raises(SaslAuthenticationError, match="invalid credentials with SASL mechanism"):
        scram.evaluate(CLIENT_FINAL)


@pytest.mark.parametrize(
    "messages",
    [
        [b"n,,n=nobody,r=abc"],
        [b"garbage"],
        [b"p=tls-unique,,n=user,r=abc"],
        [b"n,,n=user,r=abc,tokenauth=true"],
        [b"n,a=other,n=user,r=abc"],
        [CLIENT_FIRST, b"c=biws,r=wrong-nonce,p=AAAA"],
        [CLIENT_FIRST, b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=AAAA"],
        [CLIENT_FIRST, b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"],
        [CLIENT_FIRST, CLIENT_FINAL, CLIENT_FINAL],
        [b"\xff\xfe"],
    ],
)
def test_unknown_users_malformed_and_out_of_order_messages_fail(messages: list[bytes]) -> None:
    scram = server()
    with pytest.raises(SaslAuthenticationError):
        for message in messages:
            scram.evaluate(message)


def test_too_few_iterations_are_refused() -> None:
    weak = credential_from_password(SHA256, "pencil", salt=SALT, iterations=1000)
    with pytest.raises(SaslAuthenticationError):
        server(weak).evaluate(CLIENT_FIRST)


def test_user_names_are_unescaped() -> None:
    stored = credential_from_password(SHA256, "pencil", salt=SALT)
    scram = ScramServer(SHA256, lambda m, user: stored if user == "a,b=c" else None)
    assert scram.evaluate(b"n,,n=a=2Cb=3Dc,r=abc").startswith(b"r=abc")


def test_add_scram_syntax() -> None:
    user = parse_scram_user('SCRAM-SHA-512=[name=alice,password="alice-secret",iterations=8192]')
    assert (user.mechanism, user.name, user.password, user.iterations) == (
        ScramMechanism.SCRAM_SHA_512,
        "alice",
        "alice-secret",
        8192,
    )
    assert user.credential().iterations == 8192
    for text in ("MD5=[name=a,password=b]", "SCRAM-SHA-256=name=a", "SCRAM-SHA-256=[name=a]"):
        with pytest.raises(ValueError, match=r"expected|unknown"):
            parse_scram_user(text)


def test_the_client_side_of_the_rfc_7677_exchange() -> None:
    client = ScramClient(SHA256, "user", "pencil", nonce=lambda: "rOprNGfwEbeRWgbNEkqO")
    assert client.first_message() == CLIENT_FIRST
    scram = server()
    final = client.final_message(scram.evaluate(client.first_message()))
    assert final == CLIENT_FINAL
    client.verify(scram.evaluate(final))
    with pytest.raises(ValueError, match="server-final"):
        client.verify(b"v=AAAA")
