"""TLS and SASL listeners with real clients: confluent-kafka, kafka-python, aiokafka, kcat.

Each broker is a ``strom server`` process started by ``strom.testing.Broker(security=...)``
with certificates generated for the test. Bad clients (a wrong password, an unknown user, no
client certificate where one is required, garbage in the TLS or SASL handshake) get Kafka's
error, and the broker goes on serving the others.
"""

from __future__ import annotations

import shutil
import socket
import struct
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient
from kafka import KafkaProducer
from kafka.errors import KafkaError as PythonKafkaError
from kio.schema.api_versions.v0 import ApiVersionsRequest
from kio.schema.metadata.v1.request import MetadataRequest
from kio.schema.sasl_authenticate.v1.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v0.request import SaslHandshakeRequest as SaslHandshakeV0
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest
from secured_clients import (
    KAFKA_PYTHON_BOOTSTRAP_MS,
    aiokafka_config,
    aiokafka_first,
    aiokafka_produce,
    client_config,
    consume,
    kafka_python_config,
    kafka_python_first,
    kafka_python_produce,
    kcat,
    produce,
    requires_kcat,
    wire,
)
from strom_harness import ConnectionClosed

from strom.testing import Broker
from strom.testing.security import Security

pytestmark = pytest.mark.timeout(120)

REAUTH_S = 1.5
"""``connections.max.reauth.ms`` of the SASL_PLAINTEXT broker: its sessions' lifetime."""
VALUES = [b"m0", b"m1", b"m2"]


@pytest.fixture(scope="module")
def sasl_ssl() -> Iterator[Broker]:
    with Broker(security=Security(protocol="SASL_SSL"), process=True) as broker:
        yield broker


@pytest.fixture(scope="module")
def sasl_plaintext() -> Iterator[Broker]:
    config = {"connections.max.reauth.ms": int(REAUTH_S * 1000)}
    security = Security(protocol="SASL_PLAINTEXT")
    with Broker(security=security, process=True, config=config) as broker:
        yield broker


@pytest.fixture(scope="module")
def mutual_tls() -> Iterator[Broker]:
    security = Security(protocol="SSL", client_auth="required")
    with Broker(security=security, process=True) as broker:
        yield broker


def serves(broker: Broker) -> None:
    """The broker still serves a good client: produce and consume, through a group."""
    topic = broker.create_topic()
    produce(broker.producer_config(), topic, VALUES)
    assert consume(broker.consumer_config(), topic, len(VALUES)) == VALUES


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
    error = authentication_error(client_config(sasl_ssl, user, password=password))
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
        carol = client_config(broker, "carol", password="carol-secret")
        topic = broker.create_topic()
        produce(carol, topic, VALUES)
        group = {"group.id": "carol", "auto.offset.reset": "earliest"}
        assert consume({**carol, **group}, topic, len(VALUES)) == VALUES
        error = authentication_error(client_config(broker, "carol", password="wrong"))
        assert error.code() == KafkaError._AUTHENTICATION
        assert "Authentication failed: Invalid username or password" in error.str()
        serves(broker)


def test_an_unsupported_mechanism_is_refused(sasl_plaintext: Broker) -> None:
    error = authentication_error(client_config(sasl_plaintext, mechanism="SCRAM-SHA-512"))
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
    with wire(sasl_ssl) as plaintext:
        plaintext.send(ApiVersionsRequest())
        with pytest.raises((ConnectionClosed, ConnectionResetError)):
            plaintext.read_frame()
    host, port = sasl_ssl.bootstrap_servers.rsplit(":", 1)
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
        secure = client_config(broker, **{"bootstrap.servers": f"127.0.0.1:{secure_port}"})
        plain = {"bootstrap.servers": f"127.0.0.1:{plain_port}"}
        endpoints: list[tuple[dict[str, Any], int]] = [(secure, secure_port), (plain, plain_port)]
        for settings, port in endpoints:
            brokers = AdminClient(settings).list_topics(timeout=10).brokers
            assert [b.port for b in brokers.values()] == [port]
        topic = broker.create_topic()
        produce(secure, topic, VALUES)
        group = {"group.id": "several-listeners", "auto.offset.reset": "earliest"}
        assert consume({**plain, **group}, topic, len(VALUES)) == VALUES


def test_requests_before_authentication_close_the_connection(sasl_plaintext: Broker) -> None:
    with wire(sasl_plaintext) as connection:
        assert connection.request(ApiVersionsRequest()).error_code == 0
        connection.send(MetadataRequest(topics=None))
        with pytest.raises(ConnectionClosed):
            connection.read_frame()
    with wire(sasl_plaintext) as connection:
        connection.send_frame(b"\x00\x11garbage-not-a-request")
        with pytest.raises((ConnectionClosed, ConnectionResetError)):
            connection.read_frame()
    serves(sasl_plaintext)


def plain_token(user: str, password: str) -> bytes:
    return f"\0{user}\0{password}".encode()


def test_handshake_v0_takes_bare_tokens(sasl_plaintext: Broker) -> None:
    with wire(sasl_plaintext) as connection:
        response = connection.request(SaslHandshakeV0(mechanism="PLAIN"))
        assert response.error_code == 0 and response.mechanisms == ("PLAIN",)
        connection.send_frame(plain_token("alice", "alice-secret"))
        assert connection.read_frame() == b""
        assert connection.request(MetadataRequest(topics=None)).brokers
    with wire(sasl_plaintext) as connection:
        connection.request(SaslHandshakeV0(mechanism="PLAIN"))
        connection.send_frame(plain_token("alice", "nope"))
        with pytest.raises(ConnectionClosed):
            connection.read_frame()


def test_session_lifetime_reauthentication_and_expiry(sasl_plaintext: Broker) -> None:
    """KIP-368 with connections.max.reauth.ms of REAUTH_S."""
    with wire(sasl_plaintext) as connection:
        assert connection.request(SaslHandshakeRequest(mechanism="PLAIN")).error_code == 0
        answer = connection.request(SaslAuthenticateRequest(auth_bytes=plain_token("bob", "x")))
        assert answer.error_code == 58  # SASL_AUTHENTICATION_FAILED
        with pytest.raises(ConnectionClosed):
            connection.read_frame()
    with wire(sasl_plaintext) as connection:
        connection.request(SaslHandshakeRequest(mechanism="PLAIN"))
        token = plain_token("alice", "alice-secret")
        answer = connection.request(SaslAuthenticateRequest(auth_bytes=token))
        assert answer.error_code == 0
        assert answer.session_lifetime.total_seconds() == REAUTH_S
        assert connection.request(SaslHandshakeRequest(mechanism="PLAIN")).error_code == 0
        assert connection.request(SaslAuthenticateRequest(auth_bytes=token)).error_code == 0
        assert connection.request(MetadataRequest(topics=None)).brokers
        time.sleep(REAUTH_S + 0.2)
        connection.send(MetadataRequest(topics=None))
        with pytest.raises((ConnectionClosed, ConnectionResetError)):
            connection.read_frame()


def test_librdkafka_reauthenticates_across_sessions(sasl_plaintext: Broker) -> None:
    topic = sasl_plaintext.create_topic()
    errors: list[KafkaError] = []
    producer = Producer(sasl_plaintext.producer_config(error_cb=errors.append))
    deadline = time.monotonic() + 2 * REAUTH_S + 0.5  # two sessions and more
    sent = 0
    while time.monotonic() < deadline:
        producer.produce(topic, b"x")
        producer.flush(5)
        sent += 1
        time.sleep(0.2)
    assert producer.flush(10) == 0
    assert not [error for error in errors if error.code() == KafkaError._AUTHENTICATION]
    assert sent > 10  # one every 0.2 s or so: none waited on a login


def test_kafka_python_over_sasl_ssl(sasl_ssl: Broker) -> None:
    topic = sasl_ssl.create_topic()
    settings = kafka_python_config(client_config(sasl_ssl, "alice"))
    kafka_python_produce(settings, topic, b"from kafka-python")
    assert kafka_python_first(settings, topic, group_id="kafka-python-sasl") == b"from kafka-python"
    wrong = kafka_python_config(client_config(sasl_ssl, "alice", password="wrong"))
    with pytest.raises(PythonKafkaError):
        KafkaProducer(bootstrap_timeout_ms=KAFKA_PYTHON_BOOTSTRAP_MS, **wrong)


def test_aiokafka_over_sasl_ssl(sasl_ssl: Broker) -> None:
    topic = sasl_ssl.create_topic()
    settings = aiokafka_config(client_config(sasl_ssl, "alice"))
    aiokafka_produce(settings, topic, b"from aiokafka")
    assert aiokafka_first(settings, topic, group_id="aiokafka-sasl") == b"from aiokafka"


@requires_kcat
def test_kcat_over_sasl_ssl(sasl_ssl: Broker) -> None:
    topic = sasl_ssl.create_topic()
    config = sasl_ssl.producer_config()
    kcat(config, "-t", topic, "-P", input=b"one\ntwo\n")
    out = kcat(config, "-t", topic, "-C", "-e", "-f", "%s\n")
    assert out.stdout.split() == [b"one", b"two"], out.stderr
    wrong = client_config(sasl_ssl, password="wrong")
    failed = kcat(wrong, "-t", topic, "-P", input=b"three\n", check=False)  # ends at the refusal
    assert failed.returncode != 0
    assert b"Authentication failed" in failed.stderr


def test_tls_wire_carries_fetch_by_copying(mutual_tls: Broker) -> None:
    """A TLS listener serves Fetch (the file regions are copied, not sent with sendfile)."""
    with wire(mutual_tls, tls=True, certificate="alice") as connection:
        assert connection.request(ApiVersionsRequest()).error_code == 0
    serves(mutual_tls)


def test_kafka_python_aiokafka_and_kcat_with_client_certificates(mutual_tls: Broker) -> None:
    topic = mutual_tls.create_topic()
    config = client_config(mutual_tls, "alice")  # the certificate CN=alice
    kafka_python_produce(kafka_python_config(config), topic, b"from kafka-python")
    aiokafka_produce(aiokafka_config(config), topic, b"from aiokafka")
    if shutil.which("kcat") is not None:
        out = kcat(config, "-t", topic, "-C", "-e")
        assert out.stdout.split(b"\n")[:2] == [b"from kafka-python", b"from aiokafka"]


def test_frames_before_authentication_are_limited_to_sasl_server_max_receive_size(
    sasl_plaintext: Broker,
) -> None:
    with wire(sasl_plaintext) as connection:
        connection.send_raw(struct.pack(">i", 524_289) + b"x" * 100)
        with pytest.raises((ConnectionClosed, ConnectionResetError)):
            connection.read_frame()
    topic = sasl_plaintext.create_topic()
    produce(sasl_plaintext.producer_config(), topic, [b"x" * 700_000])  # larger, once authenticated
