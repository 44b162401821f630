"""Signed JWTs against a JSON Web Key Set served over HTTP by the test: RSA and EC keys, the
claims checks, and the set fetched again for an unknown kid (at most once a minute per kid)
or, after a failure, with Kafka's retry backoff."""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from jwks_keys import KeySet, b64

from strom.security.jwks import Backoff, JwksError, JwksKeys, JwksValidator, JwtChecks
from strom.security.oauthbearer import InvalidToken

NOW = int(time.time())


class Endpoint:
    """The JWKS URL: counts the fetches; answers 503 while ``failures`` is above 0."""

    def __init__(self, keys: KeySet) -> None:
        self.keys = keys
        self.fetches = 0
        self.failures = 0
        self.url = ""


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    keys = KeySet(now=NOW)
    keys.add("rsa")
    served = Endpoint(keys)

    class Serve(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            served.fetches += 1
            if served.failures > 0:
                served.failures -= 1
                self.send_error(503)
                return
            document = served.keys.document()
            self.send_response(200)
            self.send_header("Content-Length", str(len(document)))
            self.end_headers()
            self.wfile.write(document)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Serve)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    served.url = f"http://127.0.0.1:{server.server_address[1]}/jwks.json"
    yield served
    server.shutdown()
    server.server_close()


def validator(
    endpoint: Endpoint, checks: JwtChecks | None = None
) -> tuple[JwksValidator, JwksKeys]:
    keys = JwksKeys(endpoint.url)
    keys.fetch()
    return JwksValidator(keys, checks or JwtChecks()), keys


@pytest.mark.parametrize(
    "algorithm", ["RS256", "RS384", "RS512", "PS256", "PS512", "ES256", "ES384", "ES512"]
)
def test_tokens_of_each_algorithm_validate(endpoint: Endpoint, algorithm: str) -> None:
    endpoint.keys.add("key", algorithm)
    jwks, _ = validator(endpoint)
    valid = jwks.validate(endpoint.keys.token("key", algorithm), NOW * 1000)
    assert (valid.principal, valid.expiry_ms) == ("alice", (NOW + 600) * 1000)


def test_bad_signatures_and_keys_of_another_kind_are_refused(endpoint: Endpoint) -> None:
    endpoint.keys.add("ec", "ES256")
    jwks, _ = validator(endpoint)
    token = endpoint.keys.token("ec", "ES256")
    head, body, signature = token.split(".")
    flipped = b64(bytes([base64.urlsafe_b64decode(signature + "==")[0] ^ 1])) + signature[2:]
    cases = {
        f"{head}.{body}.{flipped}": "signature is not valid",
        f"{head}.{body}.{signature[:-4]}": "signature is not valid",  # too short for P-256
        endpoint.keys.token("ec", "ES256").replace(head, b64(b'{"alg":"ES384","kid":"ec"}')): (
            "no ES384 key 'ec'"  # a P-256 key cannot check ES384
        ),
        endpoint.keys.token("rsa").replace(
            endpoint.keys.token("rsa").split(".")[0], b64(b'{"alg":"none"}')
        ): "algorithm 'none' is not accepted",
    }
    for bad, message in cases.items():
        with pytest.raises(InvalidToken, match=message):
            jwks.validate(bad, NOW * 1000)


@pytest.mark.parametrize(
    ("claims", "message"),
    [
        ({"iat": "never"}, r"No Issued At \(iat\) claim present"),
        ({"exp": NOW - 3600}, "has expired"),
        ({"scp": ["read", "read"]}, "'scp' claim names 'read' twice"),
        ({"scp": " "}, "'scp' claim holds an empty"),
        ({"scp": ["read", 5]}, "'scp' claim holds an empty or non-string"),
    ],
)
def test_claims_checks(endpoint: Endpoint, claims: dict[str, Any], message: str) -> None:
    jwks, _ = validator(endpoint, JwtChecks(scope_claim="scp"))
    token = endpoint.keys.token("rsa", **claims)
    with pytest.raises(InvalidToken, match=message):
        jwks.validate(token, NOW * 1000)
    scoped = endpoint.keys.token("rsa", scp=["read", "write"], scope=5)
    assert jwks.validate(scoped, NOW * 1000).principal == "alice"


def test_an_unknown_kid_fetches_the_set_again_in_the_background(endpoint: Endpoint) -> None:
    jwks, keys = validator(endpoint)
    threading.Thread(target=keys.refresh_every, args=(3600.0,), daemon=True).start()
    endpoint.keys.add("rotated", "ES256")
    token = endpoint.keys.token("rotated", "ES256")
    with pytest.raises(InvalidToken, match="no ES256 key 'rotated'"):
        jwks.validate(token, NOW * 1000)  # refused, as Kafka does, and fetched again
    deadline = time.monotonic() + 10
    while endpoint.fetches < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    while time.monotonic() < deadline:
        try:
            assert jwks.validate(token, NOW * 1000).principal == "alice"
            break
        except InvalidToken:
            time.sleep(0.01)
    else:
        pytest.fail("the rotated key was not fetched")
    assert endpoint.fetches == 2


def test_unknown_kids_ask_for_a_refresh_at_most_once_a_minute_each_once_a_second_in_all(
    endpoint: Endpoint,
) -> None:
    now = [0.0]
    keys = JwksKeys(endpoint.url, clock=lambda: now[0])
    assert keys.expedite("a")
    assert not keys.expedite("a")  # the same kid, at once
    assert not keys.expedite("b")  # another kid, within a second
    now[0] = 1.0
    assert keys.expedite("b") and not keys.expedite("c")
    now[0] = 30.0
    assert not keys.expedite("a") and keys.expedite("c")
    now[0] = 61.0
    assert keys.expedite("a")
    assert not keys.expedite("x" * 1001)  # too long to be a kid
    for index in range(20):  # only 16 unknown kids are remembered
        now[0] += 1.0
        assert keys.expedite(f"k{index}")
    now[0] += 1.0
    assert keys.expedite("c")  # forgotten, so it may ask again


def test_a_failed_refresh_is_tried_again_with_a_doubling_backoff(endpoint: Endpoint) -> None:
    now = [0.0]
    waits: list[float] = []

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        now[0] += seconds

    keys = JwksKeys(endpoint.url, backoff=Backoff(0.1, 1.0), clock=lambda: now[0], sleep=sleep)
    endpoint.failures = 3
    keys.refresh()
    assert waits == [0.1, 0.2, 0.4] and endpoint.fetches == 4
    waits.clear()
    endpoint.failures = 100
    with pytest.raises(JwksError, match="503"):
        keys.refresh()
    assert waits == pytest.approx([0.1, 0.2, 0.4, 0.3])  # the last one up to the maximum
    jwks = JwksValidator(keys, JwtChecks())
    assert jwks.validate(endpoint.keys.token("rsa"), NOW * 1000).principal == "alice"  # kept
