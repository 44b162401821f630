"""What the security integration tests share (``from secured_clients import ...``): settings to
connect to a secured broker or cluster as one of its users, in each client's own names
(confluent-kafka's, kafka-python's, aiokafka's, kcat's), the round trips the tests make with
them, a login that stops at its first refusal, raw connections, and ``strom`` commands run as a
user.

The first user's confluent-kafka settings are ``Broker.producer_config()`` and its kin; the
helpers here add the other users, passwords and mechanisms (``SecurityFiles.client_config``).
"""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.helpers import create_ssl_context
from confluent_kafka import Consumer, KafkaError, Producer
from kafka import KafkaConsumer, KafkaProducer
from strom_harness import KafkaWire, strom_command

from strom.testing import Broker, Cluster

Secured = Broker | Cluster
"""A started broker or cluster with a secured listener (``security=Security(...)``)."""

requires_kcat = pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed")

KAFKA_PYTHON_BOOTSTRAP_MS = 1000
"""kafka-python 3 drops an answer read together with the connection's end (its transport's
``_sock_recv`` returns the end and discards the bytes), so it never sees the
SASL_AUTHENTICATION_FAILED the broker answers before closing (as Kafka's does) and retries the
bootstrap until ``bootstrap_timeout_ms`` (30 s by default). Its producers here and in the tests
get this instead: a good login bootstraps well within it (in some 10 ms), so a producer that
has not bootstrapped when it runs out was refused."""

_KAFKA_PYTHON_NAMES = {
    "bootstrap.servers": "bootstrap_servers",
    "security.protocol": "security_protocol",
    "sasl.mechanism": "sasl_mechanism",
    "sasl.username": "sasl_plain_username",
    "sasl.password": "sasl_plain_password",
    "ssl.ca.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
}


def client_config(
    server: Secured,
    user: str | None = None,
    *,
    password: str | None = None,
    mechanism: str | None = None,
    **settings: Any,
) -> dict[str, Any]:
    """confluent-kafka settings to connect to ``server`` as ``user`` (its first user by
    default) with the user's password unless ``password``, by ``mechanism`` (the listener's
    first by default), and ``settings`` on top."""
    assert server.security is not None, "the server is not secured"
    secured = server.security.client_config(user, password=password, mechanism=mechanism)
    return {"bootstrap.servers": server.bootstrap_servers, **secured, **settings}


def kafka_python_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """kafka-python's settings for confluent-kafka's ``config`` (from :func:`client_config`)."""
    return {_KAFKA_PYTHON_NAMES[name]: value for name, value in config.items()}


def aiokafka_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """aiokafka's settings for confluent-kafka's ``config``: kafka-python's, but the TLS files
    in an ``ssl_context``."""
    settings = kafka_python_config(config)
    files = {
        name.removeprefix("ssl_"): settings.pop(name)
        for name in ("ssl_cafile", "ssl_certfile", "ssl_keyfile")
        if name in settings
    }
    if files:
        settings["ssl_context"] = create_ssl_context(**files)
    return settings


def produce(
    config: Mapping[str, Any], topic: str, values: Iterable[bytes], *, partitions: int = 0
) -> None:
    """Send ``values`` to ``topic`` with confluent-kafka, each to the next of its first
    ``partitions`` partitions in turn (0: where the partitioner puts it), and see them all
    delivered."""
    producer = Producer(dict(config))
    for index, value in enumerate(values):
        producer.produce(topic, value, partition=index % partitions if partitions else -1)
    assert producer.flush(15) == 0


def consume(config: Mapping[str, Any], topic: str, count: int) -> list[bytes]:
    """The first ``count`` values a confluent-kafka consumer of ``config`` (with its group)
    subscribed to ``topic`` reads within 20 s; it commits them before it closes."""
    consumer = Consumer(dict(config))
    consumer.subscribe([topic])
    values: list[bytes] = []
    try:
        deadline = time.monotonic() + 20
        while len(values) < count and time.monotonic() < deadline:
            message = consumer.poll(1)
            if message is not None and message.error() is None:
                value = message.value()
                assert value is not None
                values.append(value)
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return values


def refused(errors: Iterable[KafkaError]) -> bool:
    """Whether a login was refused among a client's ``errors``."""
    return any(error.code() == KafkaError._AUTHENTICATION for error in errors)


def produce_one(
    config: Mapping[str, Any], topic: str, *, retry_refusals: bool = False
) -> list[KafkaError]:
    """[] once a record sent to ``topic`` with ``config`` is delivered, else the client's
    errors: as soon as its login is refused, unless ``retry_refusals`` (it retries for 10 s,
    as a client does)."""
    errors: list[KafkaError] = []
    producer = Producer({**config, "error_cb": errors.append, "log_level": 0})
    producer.produce(topic, b"x")
    deadline = time.monotonic() + 10
    while producer.flush(0.1):
        if (refused(errors) and not retry_refusals) or time.monotonic() > deadline:
            assert errors, "the record was neither delivered nor failed"
            return errors
    return []


def oauthbearer_config(server: Secured, token: str) -> dict[str, Any]:
    """confluent-kafka settings to log in to ``server`` with OAUTHBEARER and ``token``, from an
    ``oauth_cb`` (librdkafka is told it lasts an hour, so it sends it whatever its claims)."""
    assert server.security is not None, "the server is not secured"
    return {
        "bootstrap.servers": server.bootstrap_servers,
        "security.protocol": server.security.security.protocol,
        "sasl.mechanism": "OAUTHBEARER",
        "oauth_cb": lambda _config: (token, time.time() + 3600),
    }


def kafka_python_produce(settings: Mapping[str, Any], topic: str, value: bytes) -> None:
    producer = KafkaProducer(bootstrap_timeout_ms=KAFKA_PYTHON_BOOTSTRAP_MS, **settings)
    try:
        producer.send(topic, value).get(timeout=15)
    finally:
        producer.close()


def kafka_python_first(settings: Mapping[str, Any], topic: str, **consumer: Any) -> bytes:
    """The first value of ``topic`` a kafka-python consumer reads (not waiting out its
    ``consumer_timeout_ms`` for more)."""
    reader = KafkaConsumer(
        topic, auto_offset_reset="earliest", consumer_timeout_ms=15000, **consumer, **settings
    )
    try:
        record = next(reader, None)
    finally:
        reader.close()
    assert record is not None, f"nothing read from {topic}"
    return bytes(record.value)


def aiokafka_produce(settings: Mapping[str, Any], topic: str, value: bytes) -> None:
    async def send() -> None:
        producer = AIOKafkaProducer(**settings)
        await producer.start()
        try:
            await producer.send_and_wait(topic, value)
        finally:
            await producer.stop()

    asyncio.run(send())


def aiokafka_first(settings: Mapping[str, Any], topic: str, **consumer: Any) -> bytes:
    """The first value of ``topic`` an aiokafka consumer reads."""

    async def first() -> bytes:
        reader = AIOKafkaConsumer(topic, auto_offset_reset="earliest", **consumer, **settings)
        await reader.start()
        try:
            record = await asyncio.wait_for(reader.getone(), 15)
        finally:
            await reader.stop()
        assert record.value is not None
        return bytes(record.value)

    return asyncio.run(first())


def kcat(
    config: Mapping[str, Any], *args: str, input: bytes | None = None, check: bool = True
) -> subprocess.CompletedProcess[bytes]:
    """``kcat`` with confluent-kafka's ``config`` as its ``-X`` settings, then ``args``."""
    options = [arg for name, value in config.items() for arg in ("-X", f"{name}={value}")]
    return subprocess.run(
        ["kcat", *options, *args], input=input, capture_output=True, check=check, timeout=30
    )


def strom_as(
    server: Secured, directory: Path, *args: str, user: str = "admin"
) -> subprocess.CompletedProcess[str]:
    """``strom <args> --bootstrap-server ...`` as ``user``, its settings in the
    ``--command-config`` file written in ``directory``."""
    config = client_config(server, user)
    config.pop("bootstrap.servers")
    properties = directory / f"{user}.properties"
    properties.write_text("".join(f"{name}={value}\n" for name, value in config.items()))
    return subprocess.run(
        [
            *strom_command(),
            *args,
            "--bootstrap-server",
            server.bootstrap_servers,
            "--command-config",
            str(properties),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def wire(broker: Broker, *, tls: bool = False, certificate: str | None = None) -> KafkaWire:
    """A raw connection to ``broker``; ``tls``: in TLS, trusting the broker's CA and presenting
    the client certificate CN=``certificate`` if one is named."""
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    connection = KafkaWire(host, int(port))
    if not tls:
        return connection
    assert broker.security is not None, "the broker is not secured"
    context = ssl.create_default_context(cafile=str(broker.security.ca_file))
    if certificate is not None:
        key, chain = broker.security.client_certificate(certificate)
        context.load_cert_chain(chain, key)
    try:
        connection.sock = context.wrap_socket(connection.sock, server_hostname=host)
    except BaseException:
        connection.close()
        raise
    return connection
