"""SASL/OAUTHBEARER with RS256 tokens checked against a JSON Web Key Set the test serves over
HTTP (``sasl.oauthbearer.jwks.endpoint.url``), with the expected audience and issuer, and a
key rotated in the set picked up after ``sasl.oauthbearer.jwks.endpoint.refresh.ms``.

The broker's own logins use PLAIN (the first mechanism); clients use OAUTHBEARER with tokens
from an ``oauth_cb``."""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from strom.testing import Broker
from strom.testing.security import Security

pytestmark = pytest.mark.timeout(120)

AUDIENCE, ISSUER = "strom", "https://issuer.example"


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def number(value: int) -> str:
    return b64(value.to_bytes((value.bit_length() + 7) // 8, "big"))


class KeySet:
    """RSA keys by kid, served as a JWKS document."""

    def __init__(self) -> None:
        self.keys: dict[str, rsa.RSAPrivateKey] = {}
        self.add("one")

    def add(self, kid: str) -> None:
        self.keys[kid] = rsa.generate_private_key(public_exponent=65537, key_size=2048)

    def document(self) -> bytes:
        keys = []
        for kid, key in self.keys.items():
            numbers = key.public_key().public_numbers()
            keys.append({"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
                         "n": number(numbers.n), "e": number(numbers.e)})  # fmt: skip
        return json.dumps({"keys": keys}).encode()

    def token(self, kid: str, **claims: Any) -> str:
        now = int(time.time())
        body = {"sub": "alice", "aud": AUDIENCE, "iss": ISSUER, "iat": now, "exp": now + 600}
        body.update(claims)
        signed = ".".join(
            b64(json.dumps(part).encode())
            for part in ({"alg": "RS256", "kid": kid, "typ": "JWT"}, body)
        )
        signature = self.keys[kid].sign(signed.encode(), padding.PKCS1v15(), hashes.SHA256())
        return f"{signed}.{b64(signature)}"


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


def produce(broker: Broker, token: str) -> list[KafkaError]:
    errors: list[KafkaError] = []
    producer = Producer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "OAUTHBEARER",
            "oauth_cb": lambda _config: (token, time.time() + 3600),
            "error_cb": errors.append,
            "log_level": 0,
        }
    )
    producer.produce(broker.create_topic(), b"x")
    if producer.flush(10) == 0:
        return []
    assert errors, "the record was neither delivered nor failed"
    return errors


def refused(errors: list[KafkaError]) -> bool:
    return any(e.code() == KafkaError._AUTHENTICATION for e in errors)


def test_a_signed_token_of_the_set_logs_in(broker: Broker, key_set: tuple[KeySet, str]) -> None:
    keys, _ = key_set
    assert produce(broker, keys.token("one")) == []


@pytest.mark.parametrize(
    "claims",
    [{"aud": "someone-else"}, {"iss": "https://elsewhere"}, {"exp": int(time.time()) - 3600}],
    ids=["audience", "issuer", "expired"],
)
def test_tokens_failing_the_checks_are_refused(
    broker: Broker, key_set: tuple[KeySet, str], claims: dict[str, Any]
) -> None:
    keys, _ = key_set
    assert refused(produce(broker, keys.token("one", **claims)))


def test_a_token_signed_by_another_key_is_refused(broker: Broker) -> None:
    stranger = KeySet()
    assert refused(produce(broker, stranger.token("one")))


def test_a_key_added_to_the_set_is_used_after_a_refresh(
    broker: Broker, key_set: tuple[KeySet, str]
) -> None:
    keys, _ = key_set
    keys.add("two")
    time.sleep(2.5)  # sasl.oauthbearer.jwks.endpoint.refresh.ms is a second
    assert produce(broker, keys.token("two")) == []
