"""SASL/SCRAM-SHA-256 and -512 with real clients, credentials managed through the admin API
and ``strom users scram`` (AlterUserScramCredentials, DescribeUserScramCredentials).

The broker is a ``strom server`` process whose cluster starts with the users' credentials
(``strom.testing.Broker(security=...)`` writes them as ``storage format --add-scram`` would).
"""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.helpers import create_ssl_context
from confluent_kafka import KafkaError, Producer
from kafka import KafkaConsumer, KafkaProducer
from kio.schema.sasl_authenticate.v1.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest
from strom_harness import ConnectionClosed, KafkaWire, strom_command

from strom.testing import Broker
from strom.testing.security import Security

pytestmark = pytest.mark.timeout(120)

MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    security = Security(protocol="SASL_SSL", mechanisms=MECHANISMS)
    with Broker(security=security, process=True) as started:
        yield started


def settings(broker: Broker, user: str = "alice", **extra: Any) -> dict[str, Any]:
    assert broker.security is not None
    return {
        "bootstrap.servers": broker.bootstrap_servers,
        **broker.security.client_config(user, **extra),
    }


def produce(config: dict[str, Any], topic: str) -> list[KafkaError]:
    """Errors of a producer that sends one record (none: it was delivered)."""
    errors: list[KafkaError] = []
    producer = Producer({**config, "error_cb": errors.append, "log_level": 0})
    producer.produce(topic, b"x")
    if producer.flush(10) == 0:
        return []
    assert errors, "the record was neither delivered nor failed"
    return errors


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_kafka_over_sasl_ssl(broker: Broker, mechanism: str) -> None:
    topic = broker.create_topic()
    assert produce(settings(broker, mechanism=mechanism), topic) == []


def test_sasl_plaintext_with_both_mechanisms() -> None:
    security = Security(protocol="SASL_PLAINTEXT", mechanisms=MECHANISMS)
    with Broker(security=security, process=True) as plaintext:
        topic = plaintext.create_topic()
        for mechanism in MECHANISMS:
            assert produce(settings(plaintext, mechanism=mechanism), topic) == []


@pytest.mark.parametrize(("user", "password"), [("alice", "wrong"), ("mallory", "x")])
def test_wrong_password_and_unknown_user(broker: Broker, user: str, password: str) -> None:
    errors = produce(settings(broker, user, password=password), broker.create_topic())
    assert errors[0].code() == KafkaError._AUTHENTICATION
    assert "invalid credentials with SASL mechanism SCRAM-SHA-256" in errors[0].str()
    assert produce(settings(broker), broker.create_topic()) == []


def test_kafka_python_with_scram_sha_512(broker: Broker) -> None:
    assert broker.security is not None
    topic = broker.create_topic()
    common = {
        "bootstrap_servers": broker.bootstrap_servers,
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "admin",
        "sasl_plain_password": "admin-secret",
        "ssl_cafile": str(broker.security.ca_file),
    }
    producer = KafkaProducer(**common)
    producer.send(topic, b"scram").get(timeout=15)
    producer.close()
    consumer = KafkaConsumer(
        topic, auto_offset_reset="earliest", consumer_timeout_ms=10000, **common
    )
    assert [record.value for record in consumer][:1] == [b"scram"]
    consumer.close()


def test_aiokafka_with_scram_sha_256(broker: Broker) -> None:
    assert broker.security is not None
    topic = broker.create_topic()
    common = {
        "bootstrap_servers": broker.bootstrap_servers,
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-256",
        "sasl_plain_username": "alice",
        "sasl_plain_password": "alice-secret",
        "ssl_context": create_ssl_context(cafile=str(broker.security.ca_file)),
    }

    async def run() -> bytes:
        producer = AIOKafkaProducer(**common)
        await producer.start()
        try:
            await producer.send_and_wait(topic, b"aio-scram")
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, auto_offset_reset="earliest", **common)
        await consumer.start()
        try:
            record = await asyncio.wait_for(consumer.getone(), 15)
        finally:
            await consumer.stop()
        assert record.value is not None
        return bytes(record.value)

    assert asyncio.run(run()) == b"aio-scram"


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed")
def test_kcat_with_scram_sha_512(broker: Broker) -> None:
    topic = broker.create_topic()
    config = settings(broker, mechanism="SCRAM-SHA-512")
    options = [arg for name, value in config.items() for arg in ("-X", f"{name}={value}")]
    subprocess.run(["kcat", *options, "-t", topic, "-P"], input=b"k1\n", check=True, timeout=30)
    out = subprocess.run(
        ["kcat", *options, "-t", topic, "-C", "-e", "-f", "%s\n"],
        check=True,
        capture_output=True,
        timeout=30,
    )
    assert out.stdout == b"k1\n"


def strom_users(broker: Broker, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``strom users scram ...`` as the admin user, its settings in a --command-config file."""
    config = settings(broker, "admin")
    config.pop("bootstrap.servers")
    properties = tmp_path / "admin.properties"
    properties.write_text("".join(f"{name}={value}\n" for name, value in config.items()))
    return subprocess.run(
        [
            *strom_command(),
            "users",
            "scram",
            *args,
            "--bootstrap-server",
            broker.bootstrap_servers,
            "--command-config",
            str(properties),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_strom_users_scram_set_describe_delete(broker: Broker, tmp_path: Path) -> None:
    topic = broker.create_topic()
    carol = settings(broker, "carol", password="carol-secret", mechanism="SCRAM-SHA-512")
    assert produce(carol, topic)[0].code() == KafkaError._AUTHENTICATION
    done = strom_users(
        broker,
        tmp_path,
        "set",
        "--user",
        "carol",
        "--mechanism",
        "SCRAM-SHA-512",
        "--password",
        "carol-secret",
        "--iterations",
        "8192",
    )
    assert done.returncode == 0, done.stderr
    assert "Completed updating SCRAM credentials for user-principal 'carol'" in done.stdout
    assert produce(carol, topic) == []
    described = strom_users(broker, tmp_path, "describe", "--user", "carol")
    assert described.stdout.strip() == (
        "SCRAM credential configs for user-principal 'carol' are SCRAM-SHA-512=iterations=8192"
    )
    everyone = strom_users(broker, tmp_path, "describe").stdout
    assert "user-principal 'alice' are SCRAM-SHA-256=iterations=4096,SCRAM-SHA-512" in everyone
    deleted = strom_users(
        broker, tmp_path, "delete", "--user", "carol", "--mechanism", "SCRAM-SHA-512"
    )
    assert deleted.returncode == 0, deleted.stderr
    time.sleep(0.5)  # the broker applies the committed deletion
    assert produce(carol, topic)[0].code() == KafkaError._AUTHENTICATION
    missing = strom_users(
        broker, tmp_path, "delete", "--user", "carol", "--mechanism", "SCRAM-SHA-512"
    )
    assert missing.returncode != 0
    assert "does not exist" in missing.stderr


def test_scram_messages_out_of_order_or_garbage_close_that_connection_only(
    broker: Broker,
) -> None:
    assert broker.security is not None
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    context = ssl.create_default_context(cafile=str(broker.security.ca_file))
    for tokens in ([b"c=biws,r=abc,p=AAAA"], [b"\x00garbage"], [b"n,,n=alice,r=abc", b"junk"]):
        with KafkaWire(host, int(port)) as wire:
            wire.sock = context.wrap_socket(wire.sock, server_hostname=host)
            assert wire.request(SaslHandshakeRequest(mechanism="SCRAM-SHA-256")).error_code == 0
            for token in tokens[:-1]:
                assert wire.request(SaslAuthenticateRequest(auth_bytes=token)).error_code == 0
            answer = wire.request(SaslAuthenticateRequest(auth_bytes=tokens[-1]))
            assert answer.error_code == 58  # SASL_AUTHENTICATION_FAILED
            with pytest.raises((ConnectionClosed, ConnectionResetError, ssl.SSLError)):
                wire.read_frame()
    assert produce(settings(broker), broker.create_topic()) == []
