"""SASL/OAUTHBEARER with unsecured JWTs (development mode) against a ``strom server`` process:
librdkafka's own unsecured tokens, tokens from an ``oauth_cb``, aiokafka, an expired token,
and the session ending with the token (KIP-368)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from aiokafka.abc import AbstractTokenProvider
from confluent_kafka import KafkaError
from kio.schema.sasl_authenticate.v1.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest
from secured_clients import aiokafka_produce, oauthbearer_config, produce_one, wire
from strom_harness import ConnectionClosed

from strom.security.oauthbearer import oauthbearer_message, unsecured_token
from strom.testing import Broker
from strom.testing.security import Security

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    security = Security(protocol="SASL_PLAINTEXT", mechanisms=("OAUTHBEARER",))
    with Broker(security=security, process=True) as started:
        yield started


def test_librdkafka_unsecured_tokens(broker: Broker) -> None:
    assert produce_one(broker.producer_config(), broker.create_topic()) == []


def test_an_expired_token_is_refused_and_the_broker_serves_others(broker: Broker) -> None:
    expired = unsecured_token("alice", expiry_s=time.time() - 60)
    errors = produce_one(oauthbearer_config(broker, expired), broker.create_topic())
    assert errors[0].code() == KafkaError._AUTHENTICATION
    assert "the token has expired" in errors[0].str()
    fresh = unsecured_token("alice", expiry_s=time.time() + 600)
    assert produce_one(oauthbearer_config(broker, fresh), broker.create_topic()) == []


def test_aiokafka_with_a_token_provider(broker: Broker) -> None:
    class Tokens(AbstractTokenProvider):  # type: ignore[misc]  # aiokafka's base is untyped
        async def token(self) -> str:
            return unsecured_token("alice", expiry_s=time.time() + 600)

    settings = {
        "bootstrap_servers": broker.bootstrap_servers,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "OAUTHBEARER",
        "sasl_oauth_token_provider": Tokens(),
    }
    aiokafka_produce(settings, broker.create_topic(), b"aio-oauth")


def test_the_session_ends_with_the_token_and_an_expired_one_gets_kafkas_error(
    broker: Broker,
) -> None:
    handshake = SaslHandshakeRequest(mechanism="OAUTHBEARER")
    with wire(broker) as connection:
        assert connection.request(handshake).error_code == 0
        token = unsecured_token("alice", expiry_s=time.time() + 30)
        login = SaslAuthenticateRequest(auth_bytes=oauthbearer_message(token))
        answer = connection.request(login)
        assert answer.error_code == 0
        assert 25 <= answer.session_lifetime.total_seconds() <= 30
    with wire(broker) as connection:
        connection.request(handshake)
        token = unsecured_token("alice", expiry_s=time.time() - 1)
        answer = connection.request(SaslAuthenticateRequest(auth_bytes=oauthbearer_message(token)))
        assert (answer.error_code, answer.auth_bytes) == (0, b'{"status":"invalid_token"}')
        answer = connection.request(SaslAuthenticateRequest(auth_bytes=b"\x01"))
        assert answer.error_code == 58  # SASL_AUTHENTICATION_FAILED
        assert answer.error_message == "Authentication failed: the token has expired"
        with pytest.raises(ConnectionClosed):
            connection.read_frame()
