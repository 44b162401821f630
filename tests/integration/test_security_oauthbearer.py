"""SASL/OAUTHBEARER with unsecured JWTs (development mode) against a ``strom server`` process:
librdkafka's own unsecured tokens, tokens from an ``oauth_cb``, aiokafka, an expired token,
and the session ending with the token (KIP-368)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.abc import AbstractTokenProvider
from confluent_kafka import KafkaError, Producer
from kio.schema.sasl_authenticate.v1.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest
from strom_harness import ConnectionClosed, KafkaWire

from strom.security.oauthbearer import oauthbearer_message, unsecured_token
from strom.testing import Broker
from strom.testing.security import Security

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    security = Security(protocol="SASL_PLAINTEXT", mechanisms=("OAUTHBEARER",))
    with Broker(security=security, process=True) as started:
        yield started


def produce(config: dict[str, Any], topic: str) -> list[KafkaError]:
    errors: list[KafkaError] = []
    producer = Producer({**config, "error_cb": errors.append, "log_level": 0})
    producer.produce(topic, b"x")
    if producer.flush(10) == 0:
        return []
    assert errors, "the record was neither delivered nor failed"
    return errors


def test_librdkafka_unsecured_tokens(broker: Broker) -> None:
    assert produce(broker.producer_config(), broker.create_topic()) == []


def token_callback(expiry_s: float) -> Any:
    """An ``oauth_cb`` whose token expires at ``expiry_s`` (librdkafka is told an hour, so it
    sends the token whatever its claims say)."""

    def callback(_config: str) -> tuple[str, float]:
        return unsecured_token("alice", expiry_s=expiry_s), time.time() + 3600

    return callback


def test_an_expired_token_is_refused_and_the_broker_serves_others(broker: Broker) -> None:
    config = {
        "bootstrap.servers": broker.bootstrap_servers,
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "OAUTHBEARER",
        "oauth_cb": token_callback(time.time() - 60),
    }
    errors = produce(config, broker.create_topic())
    assert errors[0].code() == KafkaError._AUTHENTICATION
    assert "the token has expired" in errors[0].str()
    fresh = {**config, "oauth_cb": token_callback(time.time() + 600)}
    assert produce(fresh, broker.create_topic()) == []


def test_aiokafka_with_a_token_provider(broker: Broker) -> None:
    class Tokens(AbstractTokenProvider):  # type: ignore[misc]  # aiokafka's base is untyped
        async def token(self) -> str:
            return unsecured_token("alice", expiry_s=time.time() + 600)

    topic = broker.create_topic()

    async def run() -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=broker.bootstrap_servers,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="OAUTHBEARER",
            sasl_oauth_token_provider=Tokens(),
        )
        await producer.start()
        try:
            await producer.send_and_wait(topic, b"aio-oauth")
        finally:
            await producer.stop()

    asyncio.run(run())


def test_the_session_ends_with_the_token_and_an_expired_one_gets_kafkas_error(
    broker: Broker,
) -> None:
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    with KafkaWire(host, int(port)) as wire:
        assert wire.request(SaslHandshakeRequest(mechanism="OAUTHBEARER")).error_code == 0
        token = unsecured_token("alice", expiry_s=time.time() + 30)
        answer = wire.request(SaslAuthenticateRequest(auth_bytes=oauthbearer_message(token)))
        assert answer.error_code == 0
        assert 25 <= answer.session_lifetime.total_seconds() <= 30
    with KafkaWire(host, int(port)) as wire:
        wire.request(SaslHandshakeRequest(mechanism="OAUTHBEARER"))
        token = unsecured_token("alice", expiry_s=time.time() - 1)
        answer = wire.request(SaslAuthenticateRequest(auth_bytes=oauthbearer_message(token)))
        assert (answer.error_code, answer.auth_bytes) == (0, b'{"status":"invalid_token"}')
        answer = wire.request(SaslAuthenticateRequest(auth_bytes=b"\x01"))
        assert answer.error_code == 58  # SASL_AUTHENTICATION_FAILED
        assert answer.error_message == "Authentication failed: the token has expired"
        with pytest.raises(ConnectionClosed):
            wire.read_frame()
