"""SASL/OAUTHBEARER with RS256 and ES256 tokens checked against a JSON Web Key Set the test
serves over HTTP (``sasl.oauthbearer.jwks.endpoint.url``), with the expected audience and
issuer; a key rotated into the set is fetched when a token names it, and one taken out of it is
dropped at the next refresh (``sasl.oauthbearer.jwks.endpoint.refresh.ms``).

The broker's own logins use PLAIN (the first mechanism); clients use OAUTHBEARER with tokens
from an ``oauth_cb``."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwks_keys
import pytest
from secured_clients import oauthbearer_config, produce_one, refused

from strom.testing import Broker
from strom.testing.security import Security

pytestmark = pytest.mark.timeout(120)

AUDIENCE, ISSUER = "strom", "https://issuer.example"


class KeySet(jwks_keys.KeySet):
    """RSA keys, and EC P-256 keys for kids starting ``ec``; tokens for the broker's audience
    and issuer."""

    def __init__(self) -> None:
        super().__init__()
        self.add("one")
        self.add("ec-one")

    def add(self, kid: str, algorithm: str | None = None) -> None:
        super().add(kid, algorithm or ("ES256" if kid.startswith("ec") else "RS256"))

    def token(self, kid: str, algorithm: str | None = None, **claims: Any) -> str:
        return super().token(kid, algorithm, **{"aud": AUDIENCE, "iss": ISSUER, **claims})


@pytest.fixture(scope="module")
def key_set() -> Iterator[tuple[KeySet, str]]:
    keys = KeySet()

    class Serve(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            document = keys.document()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(document)))
            self.end_headers()
            self.wfile.write(document)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Serve)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield keys, f"http://127.0.0.1:{server.server_address[1]}/jwks.json"
    server.shutdown()


@pytest.fixture(scope="module")
def broker(key_set: tuple[KeySet, str]) -> Iterator[Broker]:
    security = Security(protocol="SASL_PLAINTEXT", mechanisms=("PLAIN", "OAUTHBEARER"))
    config = {
        "sasl.oauthbearer.jwks.endpoint.url": key_set[1],
        "sasl.oauthbearer.jwks.endpoint.refresh.ms": 1000,
        "sasl.oauthbearer.expected.audience": AUDIENCE,
        "sasl.oauthbearer.expected.issuer": ISSUER,
    }
    with Broker(security=security, process=True, config=config) as started:
        yield started


def logs_in(broker: Broker, token: str, *, retry_refusals: bool = False) -> bool:
    """Whether a record sent with ``token`` is delivered (see ``produce_one``); a client that
    gets no refusal either fails the test."""
    errors = produce_one(
        oauthbearer_config(broker, token), broker.create_topic(), retry_refusals=retry_refusals
    )
    assert not errors or refused(errors), errors
    return not errors


def test_signed_tokens_of_the_set_log_in(broker: Broker, key_set: tuple[KeySet, str]) -> None:
    keys, _ = key_set
    assert logs_in(broker, keys.token("one"))
    assert logs_in(broker, keys.token("ec-one"))


@pytest.mark.parametrize(
    "claims",
    [{"aud": "someone-else"}, {"iss": "https://elsewhere"}, {"exp": int(time.time()) - 3600}],
    ids=["audience", "issuer", "expired"],
)
def test_tokens_failing_the_checks_are_refused(
    broker: Broker, key_set: tuple[KeySet, str], claims: dict[str, Any]
) -> None:
    keys, _ = key_set
    assert not logs_in(broker, keys.token("one", **claims))


def test_a_token_signed_by_another_key_is_refused(broker: Broker) -> None:
    stranger = KeySet()
    assert not logs_in(broker, stranger.token("one"))


def test_a_key_rotated_in_is_fetched_when_a_token_names_it(
    broker: Broker, key_set: tuple[KeySet, str]
) -> None:
    """The first login with the new kid is refused and the set fetched again at once; the
    client's next attempt logs in (refresh.ms would be a second here, the retry is sooner)."""
    keys, _ = key_set
    keys.add("two")
    assert logs_in(broker, keys.token("two"), retry_refusals=True)


def test_a_key_taken_out_of_the_set_is_dropped_at_the_next_refresh(
    broker: Broker, key_set: tuple[KeySet, str]
) -> None:
    keys, _ = key_set
    keys.add("ec-gone")
    token = keys.token("ec-gone")
    assert logs_in(broker, token)
    del keys.keys["ec-gone"]
    deadline = time.monotonic() + 2.5  # sasl.oauthbearer.jwks.endpoint.refresh.ms is a second
    while logs_in(broker, token):
        assert time.monotonic() < deadline, "the key is still taken after two refreshes"
