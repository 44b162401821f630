"""TLS and SASL listeners with real clients: confluent-kafka, kafka-python, aiokafka, kcat.

Each broker is a ``strom server`` process started by ``strom.testing.Broker(security=...)``
with certificates generated for the test. Bad clients (a wrong password, an unknown user, no
client certificate where one is required, garbage in the TLS or SASL handshake) get Kafka's
error, and the broker goes on serving the others.
"""

from __future__ import annotations

import asyncio
import shutil
import socket
import ssl
import struct
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.helpers import create_ssl_context
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer, KafkaProducer
from kafka.errors import KafkaError as PythonKafkaError
from kio.schema.api_versions.v0 import ApiVersionsRequest
from kio.schema.metadata.v1.request import MetadataRequest
from kio.schema.sasl_authenticate.v1.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v0.request import SaslHandshakeRequest as SaslHandshakeV0
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest
from strom_harness import ConnectionClosed, KafkaWire

from strom.testing import Broker
from strom.testing.security import Security

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def sasl_ssl() -> Iterator[Broker]:
    with Broker(security=Security(protocol="SASL_SSL"), process=True) as broker:
        yield broker


@pytest.fixture(scope="module")
def sasl_plaintext() -> Iterator[Broker]:
    config = {"connections.max.reauth.ms": "3000"}
    security = Security(protocol="SASL_PLAINTEXT")
    with Broker(security=security, process=True, config=config) as broker:
        yield broker


@pytest.fixture(scope="module")
def mutual_tls() -> Iterator[Broker]:
    security = Security(protocol="SSL", client_auth="required")
    with Broker(security=security, process=True) as broker:
        yield broker


def round_trip(config: dict[str, Any], consumer_config: dict[str, Any], topic: str) -> list[bytes]:
    producer = Producer(config)
    for index in range(3):
        producer.produce(topic, f"m{index}".encode())
    assert producer.flush(15) == 0
    consumer = Consumer(consumer_config)
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + 20
    while len(values) < 3 and time.monotonic() < deadline:
        message = consumer.poll(1)
        if message is not None and message.error() is None:
            value = message.value()
            assert value is not None
            values.append(value)
    consumer.commit(asynchronous=False)
    consumer.close()
    return values


def serves(broker: Broker) -> None:
    """The broker still serves a good client: produce and consume, through a group."""
    topic = broker.create_topic()
    values = round_trip(broker.producer_config(), broker.consumer_config(), topic)
    assert values == [b"m0", b"m1", b"m2"]


@pytest.mark.parametrize("fixture", ["sasl_ssl", "sasl_plaintext", "mutual_tls"])
def test_confluent_kafka_produces_consumes_in_groups_and_administers(
    fixture: str, request: pytest.FixtureRequest
) -> None:
    broker: Broker = request.getfixturevalue(fixture)
    serves(broker)
    admin = AdminClient(broker.admin_config())
    topics = admin.list_topics(timeout=10).topics
    assert "__consumer_offsets" in topics
    groups = admin.list_consumer_groups().result(timeout=10)
    assert groups.valid


def authentication_error(config: dict[str, Any]) -> KafkaError:
    """The first error a client with ``config`` reports (its connections all fail)."""
    errors: list[KafkaError] = []
    producer = Producer({**config, "error_cb": errors.append, "log_level": 0})
    deadline = time.monotonic() + 15
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    assert errors, "no error reported"
    return errors[0]


@pytest.mark.parametrize(("user", "password"), [("alice", "wrong"), ("mallory", "alice-secret")])
def test_wrong_password_and_unknown_user_fail_and_the_broker_serves_others(
    sasl_ssl: Broker, user: str, password: str
) -> None:
    assert sasl_ssl.security is not None
    config = {
        "bootstrap.servers": sasl_ssl.bootstrap_servers,
        **sasl_ssl.security.client_config(user, password=password),
    }
    error = authentication_error(config)
    assert error.code() == KafkaError._AUTHENTICATION
    assert "Authentication failed: Invalid username or password" in error.str()
    serves(sasl_ssl)


def test_plain_users_from_a_jaas_file_named_in_kafka_opts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The JAAS file of ``-Djava.security.auth.login.config`` in ``$KAFKA_OPTS``, as Kafka's
    start script passes it; no ``sasl.jaas.config`` setting."""
    jaas = tmp_path / "kafka_server_jaas.conf"
    jaas.write_text(
        "KafkaServer {\n"
        "  org.apache.kafka.common.security.plain.PlainLoginModule required\n"
        '    username="admin" password="admin-secret"\n'
        '    user_admin="admin-secret" user_carol="carol-secret";\n'
        "};\n"
    )
    monkeypatch.setenv("KAFKA_OPTS", f"-Djava.security.auth.login.config={jaas}")
    security = Security(protocol="SASL_PLAINTEXT", users={"admin": "admin-secret"})
    with Broker(security=security, process=True, config={"sasl.jaas.config": ""}) as broker:
        assert broker.security is not None
        carol = {
            "bootstrap.servers": broker.bootstrap_servers,
            **broker.security.client_config("carol", password="carol-secret"),
        }
        topic = broker.create_topic()
        group = {"group.id": "carol", "auto.offset.reset": "earliest"}
        assert round_trip(carol, {**carol, **group}, topic) == [b"m0", b"m1", b"m2"]
        error = authentication_error({**carol, "sasl.password": "wrong"})
        assert error.code() == KafkaError._AUTHENTICATION
        assert "Authentication failed: Invalid username or password" in error.str()
        serves(broker)


def test_an_unsupported_mechanism_is_refused(sasl_plaintext: Broker) -> None:
    assert sasl_plaintext.security is not None
    config = {
        "bootstrap.servers": sasl_plaintext.bootstrap_servers,
        **sasl_plaintext.security.client_config(mechanism="SCRAM-SHA-512"),
    }
    error = authentication_error(config)
    assert "Unsupported SASL mechanism" in error.str() or "PLAIN" in error.str()


def test_a_client_without_a_certificate_is_refused_when_one_is_required(
    mutual_tls: Broker,
) -> None:
    assert mutual_tls.security is not None
    config = {
        "bootstrap.servers": mutual_tls.bootstrap_servers,
        "security.protocol": "SSL",
        "ssl.ca.location": str(mutual_tls.security.ca_file),
    }
    error = authentication_error(config)
    assert error.code() in (KafkaError._SSL, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN)
    serves(mutual_tls)


def test_a_plaintext_client_on_a_tls_listener_is_closed(sasl_ssl: Broker) -> None:
    host, port = sasl_ssl.bootstrap_servers.rsplit(":", 1)
    with KafkaWire(host, int(port)) as wire:
        wire.send(ApiVersionsRequest())
        with pytest.raises((ConnectionClosed, ConnectionResetError)):
            wire.read_frame()
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(b"\x16\x03\x01\x00\x05garbage" * 10)
        while sock.recv(1024):  # a TLS alert at most, then the broker closes
            pass
    serves(sasl_ssl)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_several_listeners_with_different_protocols_at_once() -> None:
    """PLAINTEXT and SASL_SSL side by side; each describes the brokers on its own endpoint."""
    plain_port, secure_port = free_port(), free_port()
    config = {
        "listeners": f"SASL_SSL://127.0.0.1:{secure_port},PLAINTEXT://127.0.0.1:{plain_port}",
        "inter.broker.listener.name": "PLAINTEXT",
    }
    with Broker(security=Security(protocol="SASL_SSL"), process=True, config=config) as broker:
        assert broker.security is not None
        secure = {
            "bootstrap.servers": f"127.0.0.1:{secure_port}",
            **broker.security.client_config(),
        }
        plain = {"bootstrap.servers": f"127.0.0.1:{plain_port}"}
        endpoints: list[tuple[dict[str, Any], int]] = [(secure, secure_port), (plain, plain_port)]
        for settings, port in endpoints:
            brokers = AdminClient(settings).list_topics(timeout=10).brokers
            assert [b.port for b in brokers.values()] == [port]
        topic = broker.create_topic()
        group = {"group.id": "several-listeners", "auto.offset.reset": "earliest"}
        assert round_trip(secure, {**plain, **group}, topic) == [b"m0", b"m1", b"m2"]


def sasl_wire(broker: Broker) -> KafkaWire:
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    return KafkaWire(host, int(port))


def test_requests_before_authentication_close_the_connection(sasl_plaintext: Broker) -> None:
    with sasl_wire(sasl_plaintext) as wire:
        assert wire.request(ApiVersionsRequest()).error_code == 0
        wire.send(MetadataRequest(topics=None))
        with pytest.raises(ConnectionClosed):
            wire.read_frame()
    with sasl_wire(sasl_plaintext) as wire:
        wire.send_frame(b"\x00\x11garbage-not-a-request")
        with pytest.raises((ConnectionClosed, ConnectionResetError)):
            wire.read_frame()
    serves(sasl_plaintext)


def plain_token(user: str, password: str) -> bytes:
    return f"\0{user}\0{password}".encode()


def test_handshake_v0_takes_bare_tokens(sasl_plaintext: Broker) -> None:
    with sasl_wire(sasl_plaintext) as wire:
        response = wire.request(SaslHandshakeV0(mechanism="PLAIN"))
        assert response.error_code == 0 and response.mechanisms == ("PLAIN",)
        wire.send_frame(plain_token("alice", "alice-secret"))
        assert wire.read_frame() == b""
        assert wire.request(MetadataRequest(topics=None)).brokers
    with sasl_wire(sasl_plaintext) as wire:
        wire.request(SaslHandshakeV0(mechanism="PLAIN"))
        wire.send_frame(plain_token("alice", "nope"))
        with pytest.raises(ConnectionClosed):
            wire.read_frame()


def test_session_lifetime_reauthentication_and_expiry(sasl_plaintext: Broker) -> None:
    """KIP-368 with connections.max.reauth.ms=3000."""
    with sasl_wire(sasl_plaintext) as wire:
        assert wire.request(SaslHandshakeRequest(mechanism="PLAIN")).error_code == 0
        answer = wire.request(SaslAuthenticateRequest(auth_bytes=plain_token("bob", "x")))
        assert answer.error_code == 58  # SASL_AUTHENTICATION_FAILED
        with pytest.raises(ConnectionClosed):
            wire.read_frame()
    with sasl_wire(sasl_plaintext) as wire:
        wire.request(SaslHandshakeRequest(mechanism="PLAIN"))
        token = plain_token("alice", "alice-secret")
        answer = wire.request(SaslAuthenticateRequest(auth_bytes=token))
        assert answer.error_code == 0
        assert answer.session_lifetime.total_seconds() == 3.0
        assert wire.request(SaslHandshakeRequest(mechanism="PLAIN")).error_code == 0
        assert wire.request(SaslAuthenticateRequest(auth_bytes=token)).error_code == 0
        assert wire.request(MetadataRequest(topics=None)).brokers
        time.sleep(3.2)
        wire.send(MetadataRequest(topics=None))
        with pytest.raises((ConnectionClosed, ConnectionResetError)):
            wire.read_frame()


def test_librdkafka_reauthenticates_across_sessions(sasl_plaintext: Broker) -> None:
    topic = sasl_plaintext.create_topic()
    errors: list[KafkaError] = []
    producer = Producer(sasl_plaintext.producer_config(error_cb=errors.append))
    deadline = time.monotonic() + 7  # two sessions of 3 s and more
    sent = 0
    while time.monotonic() < deadline:
        producer.produce(topic, b"x")
        producer.flush(5)
        sent += 1
        time.sleep(0.2)
    assert producer.flush(10) == 0
    assert not [error for error in errors if error.code() == KafkaError._AUTHENTICATION]
    assert sent > 20


def kafka_python_settings(broker: Broker, password: str | None = None) -> dict[str, Any]:
    assert broker.security is not None
    return {
        "bootstrap_servers": broker.bootstrap_servers,
        "security_protocol": broker.security.security.protocol,
        "sasl_mechanism": "PLAIN",
        "sasl_plain_username": "alice",
        "sasl_plain_password": password or "alice-secret",
        "ssl_cafile": str(broker.security.ca_file),
        "ssl_check_hostname": True,
    }


KAFKA_PYTHON_BOOTSTRAP_MS = 3000
"""kafka-python 3 drops an answer read together with the connection's end (its transport's
``_sock_recv`` returns the end and discards the bytes), so it never sees the
SASL_AUTHENTICATION_FAILED the broker answers before closing (as Kafka's does) and retries the
bootstrap until ``bootstrap_timeout_ms`` (30 s by default). Both producers get this instead."""


def test_kafka_python_over_sasl_ssl(sasl_ssl: Broker) -> None:
    topic = sasl_ssl.create_topic()
    settings = kafka_python_settings(sasl_ssl)
    producer = KafkaProducer(bootstrap_timeout_ms=KAFKA_PYTHON_BOOTSTRAP_MS, **settings)
    producer.send(topic, b"from kafka-python").get(timeout=15)
    producer.close()
    consumer = KafkaConsumer(
        topic,
        group_id="kafka-python-sasl",
        auto_offset_reset="earliest",
        consumer_timeout_ms=10000,
        **settings,
    )
    assert next(consumer).value == b"from kafka-python"  # not waiting out consumer_timeout_ms
    consumer.close()
    with pytest.raises(PythonKafkaError):
        KafkaProducer(
            bootstrap_timeout_ms=KAFKA_PYTHON_BOOTSTRAP_MS,
            **kafka_python_settings(sasl_ssl, password="wrong"),
        )


def test_aiokafka_over_sasl_ssl(sasl_ssl: Broker) -> None:
    assert sasl_ssl.security is not None
    topic = sasl_ssl.create_topic()
    settings = {
        "bootstrap_servers": sasl_ssl.bootstrap_servers,
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "PLAIN",
        "sasl_plain_username": "alice",
        "sasl_plain_password": "alice-secret",
        "ssl_context": create_ssl_context(cafile=str(sasl_ssl.security.ca_file)),
    }

    async def run() -> bytes:
        producer = AIOKafkaProducer(**settings)
        await producer.start()
        try:
            await producer.send_and_wait(topic, b"from aiokafka")
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            topic, group_id="aiokafka-sasl", auto_offset_reset="earliest", **settings
        )
        await consumer.start()
        try:
            record = await asyncio.wait_for(consumer.getone(), 15)
        finally:
            await consumer.stop()
        assert record.value is not None
        return bytes(record.value)

    assert asyncio.run(run()) == b"from aiokafka"


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed")
def test_kcat_over_sasl_ssl(sasl_ssl: Broker) -> None:
    assert sasl_ssl.security is not None
    topic = sasl_ssl.create_topic()
    settings = sasl_ssl.security.client_config()
    options = [arg for name, value in settings.items() for arg in ("-X", f"{name}={value}")]
    base = ["kcat", "-b", sasl_ssl.bootstrap_servers, *options, "-t", topic]
    subprocess.run([*base, "-P"], input=b"one\ntwo\n", check=True, timeout=30)
    out = subprocess.run(
        [*base, "-C", "-e", "-f", "%s\n"], check=True, capture_output=True, timeout=30
    )
    assert out.stdout.split() == [b"one", b"two"], out.stderr
    wrong = {**settings, "sasl.password": "wrong"}
    options = [arg for name, value in wrong.items() for arg in ("-X", f"{name}={value}")]
    failed = subprocess.run(
        ["kcat", "-b", sasl_ssl.bootstrap_servers, *options, "-L", "-m", "5"],
        check=False,
        capture_output=True,
        timeout=30,
    )
    assert failed.returncode != 0
    assert b"Authentication failed" in failed.stderr


def test_tls_wire_carries_fetch_by_copying(mutual_tls: Broker) -> None:
    """A TLS listener serves Fetch (the file regions are copied, not sent with sendfile)."""
    assert mutual_tls.security is not None
    context = ssl.create_default_context(cafile=str(mutual_tls.security.ca_file))
    key, chain = mutual_tls.security.client_certificate("alice")
    context.load_cert_chain(chain, key)
    host, port = mutual_tls.bootstrap_servers.rsplit(":", 1)
    with KafkaWire(host, int(port)) as wire:
        wire.sock = context.wrap_socket(wire.sock, server_hostname=host)
        assert wire.request(ApiVersionsRequest()).error_code == 0
    serves(mutual_tls)


def test_kafka_python_aiokafka_and_kcat_with_client_certificates(mutual_tls: Broker) -> None:
    assert mutual_tls.security is not None
    files = mutual_tls.security
    key, chain = files.client_certificate("alice")
    topic = mutual_tls.create_topic()
    producer = KafkaProducer(
        bootstrap_servers=mutual_tls.bootstrap_servers,
        security_protocol="SSL",
        ssl_cafile=str(files.ca_file),
        ssl_certfile=str(chain),
        ssl_keyfile=str(key),
    )
    producer.send(topic, b"from kafka-python").get(timeout=15)
    producer.close()

    async def aiokafka_send() -> None:
        context = create_ssl_context(
            cafile=str(files.ca_file), certfile=str(chain), keyfile=str(key)
        )
        aio = AIOKafkaProducer(
            bootstrap_servers=mutual_tls.bootstrap_servers,
            security_protocol="SSL",
            ssl_context=context,
        )
        await aio.start()
        try:
            await aio.send_and_wait(topic, b"from aiokafka")
        finally:
            await aio.stop()

    asyncio.run(aiokafka_send())
    if shutil.which("kcat") is not None:
        options = [
            arg
            for name, value in files.client_config("alice").items()
            for arg in ("-X", f"{name}={value}")
        ]
        out = subprocess.run(
            ["kcat", "-b", mutual_tls.bootstrap_servers, *options, "-t", topic, "-C", "-e"],
            check=True,
            capture_output=True,
            timeout=30,
        )
        assert out.stdout.split(b"\n")[:2] == [b"from kafka-python", b"from aiokafka"]


def test_frames_before_authentication_are_limited_to_sasl_server_max_receive_size(
    sasl_plaintext: Broker,
) -> None:
    with sasl_wire(sasl_plaintext) as wire:
        wire.send_raw(struct.pack(">i", 524_289) + b"x" * 100)
        with pytest.raises((ConnectionClosed, ConnectionResetError)):
            wire.read_frame()
    topic = sasl_plaintext.create_topic()
    producer = Producer(sasl_plaintext.producer_config())
    producer.produce(topic, b"x" * 700_000)  # larger, once authenticated
    assert producer.flush(15) == 0
