"""Client quotas and connection limits against a real ``strom server`` with real clients.

Quotas are set with ``strom configs`` (AlterClientQuotas): a confluent-kafka producer and
consumer running flat out are held to within 20% of their byte rates. The quota is measured
over 5 windows of a second: a client may first use at once what the windows hold (Kafka's
sampled rate lets a burst through), and again when that burst's window expires, so rates are
measured over whole 5-second periods, with requests small against the quota. A producer's is
measured after its first burst. A consumer's fetches over the quota are answered empty (as
Kafka's), so it gets its records in one burst a period, the first one at once: its rate is
the records of whole periods, from its first burst to its third, over their length.
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from data_clients import produce_v3, records_batch
from kio.schema.api_versions.v0.request import ApiVersionsRequest
from kio.schema.sasl_authenticate.v1.request import SaslAuthenticateRequest
from kio.schema.sasl_handshake.v1.request import SaslHandshakeRequest
from strom_harness import KafkaWire, strom_command

from strom.testing import Broker
from strom.testing.security import Security

pytestmark = pytest.mark.timeout(180)

PRODUCE_QUOTA = 200 * 1024
CONSUME_QUOTA = 400 * 1024
MEASURED = (3.0, 13.0)
"""Seconds from the start of a producer's run over which its rate is measured."""
BURST_PERIOD = 5.0
"""The quota's 5 windows of a second: a throttled consumer gets one burst per period."""
BURST_GAP = 1.0
"""A pause in a consumer's records longer than this begins a new burst."""
PERIODS = 2
"""Whole periods a consumer's rate is measured over, from its first burst to its third: the
records of whole periods over their length, whatever delay the first record had."""
VALUE = b"x" * 10_000
SMALL = 65536
"""Requests and answers of at most this size, so that the rate is even over a few seconds."""
BACKLOG_KB = 1024
"""What a producer queues before ``produce`` pushes back: a few seconds of its quota, always
more than one request, so that it sends flat out without piling up what it cannot send."""


@pytest.fixture(scope="module")
def broker() -> Iterator[Broker]:
    config = {"quota.window.num": 5, "quota.window.size.seconds": 1}
    with Broker(process=True, config=config) as started:
        yield started


def configs(broker: Broker, *args: str) -> str:
    done = subprocess.run(
        [*strom_command(), "configs", *args, "--bootstrap-server", broker.bootstrap_servers],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def rate(events: list[tuple[float, int]], start: float) -> float:
    low, high = MEASURED
    return sum(size for at, size in events if low <= at - start < high) / (high - low)


def test_quotas_are_set_described_and_removed_with_strom_configs(broker: Broker) -> None:
    out = configs(
        broker, "alter", "--user", "carol", "--client", "app",
        "--add-config", "producer_byte_rate=1024,request_percentage=50.5",
    )  # fmt: skip
    assert out == "Completed updating config for user carol, client app.\n"
    out = configs(broker, "describe", "--user", "carol", "--client", "app")
    assert out == (
        "Quota configs for user-principal 'carol', client-id 'app' are "
        "producer_byte_rate=1024.0, request_percentage=50.5\n"
    )
    configs(broker, "alter", "--user", "carol", "--client", "app", "--delete-config",
            "producer_byte_rate,request_percentage")  # fmt: skip
    assert configs(broker, "describe", "--user", "carol", "--client", "app") == ""
    refused = subprocess.run(
        [*strom_command(), "configs", "alter", "--entity-type", "clients", "--entity-default",
         "--add-config", "producer_byte_rate=1.5", "--bootstrap-server", broker.bootstrap_servers],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert refused.returncode != 0
    assert "INVALID_REQUEST: producer_byte_rate cannot be a fractional value." in refused.stderr


def test_a_producer_is_held_to_its_byte_rate(broker: Broker) -> None:
    topic = broker.create_topic()
    configs(broker, "alter", "--entity-type", "clients", "--entity-name", "quota-producer",
            "--add-config", f"producer_byte_rate={PRODUCE_QUOTA}")  # fmt: skip
    acked: list[tuple[float, int]] = []

    def delivered(error: Any, message: Any) -> None:
        if error is None:
            acked.append((time.monotonic(), len(message.value())))

    producer = Producer(
        {"bootstrap.servers": broker.bootstrap_servers, "client.id": "quota-producer",
         "linger.ms": 5, "batch.size": SMALL, "log_level": 0,
         "queue.buffering.max.kbytes": BACKLOG_KB}
    )  # fmt: skip
    start = time.monotonic()
    while time.monotonic() - start < MEASURED[1]:
        try:
            producer.produce(topic, VALUE, on_delivery=delivered)
        except BufferError:
            producer.poll(0.05)
        producer.poll(0)
    producer.purge()  # what is still queued would only be sent after the measured seconds
    producer.flush(10)
    assert rate(acked, start) == pytest.approx(PRODUCE_QUOTA, rel=0.2)
    unthrottled = Producer({"bootstrap.servers": broker.bootstrap_servers, "client.id": "other"})
    begin = time.monotonic()
    for _ in range(300):  # 3 MB: ten seconds of the quota, not throttled
        unthrottled.produce(topic, VALUE)
        unthrottled.poll(0)
    assert unthrottled.flush(30) == 0
    assert time.monotonic() - begin < 5


def test_a_consumer_is_held_to_its_byte_rate(broker: Broker) -> None:
    topic = broker.create_topic()
    batch = records_batch([VALUE] * 6)
    host, port = broker.bootstrap_servers.rsplit(":", 1)
    with KafkaWire(host, int(port)) as wire:  # what the consumer will read at most, and more
        for _ in range(int(CONSUME_QUOTA * 1.5 * (PERIODS + 1) * BURST_PERIOD / len(batch))):
            answer = wire.request(produce_v3({(topic, 0): batch}))
            assert answer.responses[0].partition_responses[0].error_code == 0
    configs(broker, "alter", "--entity-type", "users", "--entity-default",
            "--add-config", f"consumer_byte_rate={CONSUME_QUOTA}")  # fmt: skip
    # Fetches of one whole batch: the part of a batch that may end a fetch counts under the
    # quota, and the client drops it.
    consumer = Consumer(
        {"bootstrap.servers": broker.bootstrap_servers, "group.id": topic, "log_level": 0,
         "max.partition.fetch.bytes": len(batch)}
    )  # fmt: skip
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    bursts: list[float] = []  # when each burst began
    consumed = 0  # bytes received before the last burst began
    pending = 0  # bytes of the burst under way
    last = 0.0
    try:
        deadline = time.monotonic() + 4 * BURST_PERIOD
        while len(bursts) <= PERIODS and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is None or message.error() is not None:
                continue
            now = time.monotonic()
            if not bursts or now - last > BURST_GAP:
                bursts.append(now)
                consumed += pending
                pending = 0
            pending += len(message.value() or b"")
            last = now
    finally:
        consumer.close()
        configs(broker, "alter", "--entity-type", "users", "--entity-default",
                "--delete-config", "consumer_byte_rate")  # fmt: skip
    assert len(bursts) > PERIODS, f"bursts began at {bursts}"
    rate = consumed / (bursts[-1] - bursts[0])
    assert rate == pytest.approx(CONSUME_QUOTA, rel=0.2)


@dataclass
class WireFrom(KafkaWire):
    """A raw client connecting from a source address of its own (127.0.0.x)."""

    source: str = "127.0.0.1"

    def __post_init__(self) -> None:
        self.sock = socket.create_connection(
            (self.host, self.port), timeout=self.timeout, source_address=(self.source, 0)
        )
        self._next_correlation_id = 1


def served(wire: KafkaWire) -> bool:
    return bool(wire.request(ApiVersionsRequest()).error_code == 0)


def test_connections_over_max_connections_per_ip_are_refused_while_the_others_are_served() -> None:
    config = {"max.connections.per.ip": 2, "max.connections.per.ip.overrides": "127.0.0.2:3"}
    with Broker(process=True, config=config) as broker:
        host, port = broker.bootstrap_servers.rsplit(":", 1)
        first, second = (WireFrom(host, int(port)) for _ in range(2))
        third = WireFrom(host, int(port))  # a third from 127.0.0.1: max.connections.per.ip
        assert third.is_closed_by_peer()
        overridden = [WireFrom(host, int(port), source="127.0.0.2") for _ in range(4)]
        assert overridden[3].is_closed_by_peer()  # 127.0.0.2 may have 3
        assert served(first) and served(second) and all(served(w) for w in overridden[:3])
        first.close()
        time.sleep(0.5)
        again = WireFrom(host, int(port))  # a slot was freed
        assert served(again)
        for wire in (second, third, *overridden, again):
            wire.close()


def test_a_client_over_max_connections_waits_for_a_slot_without_an_error() -> None:
    """Kafka's acceptor stops accepting at max.connections: the client's connection waits (its
    TCP connection is made, nothing is read) until another closes."""
    with Broker(process=True, config={"max.connections": 3}) as broker:
        host, port = broker.bootstrap_servers.rsplit(":", 1)
        held = [WireFrom(host, int(port)) for _ in range(3)]
        assert all(served(wire) for wire in held)
        errors: list[KafkaError] = []
        producer = Producer(
            {"bootstrap.servers": broker.bootstrap_servers, "error_cb": errors.append}
        )
        producer.produce("waited-for-a-slot", b"x")
        assert producer.flush(2) == 1  # waiting
        for wire in held[:2]:  # librdkafka connects twice: to the bootstrap server, to broker 1
            wire.close()
        assert producer.flush(15) == 0
        assert errors == []
        assert served(held[2])
        held[2].close()


def test_an_inter_broker_connection_over_max_connections_closes_a_clients() -> None:
    """The inter-broker listener is not held to max.connections; the client listener closes its
    least recently active connection instead."""
    plain, internal = free_port(), free_port()
    config = {
        "listeners": f"PLAINTEXT://127.0.0.1:{plain},INTERNAL://127.0.0.1:{internal}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL",
        "max.connections": 2,
    }
    with Broker(process=True, config=config):
        idle, busy = WireFrom("127.0.0.1", plain), WireFrom("127.0.0.1", plain)
        assert served(idle)
        assert served(busy)  # after idle's last request
        broker_to_broker = WireFrom("127.0.0.1", internal)
        assert served(broker_to_broker)
        assert idle.is_closed_by_peer()
        assert served(busy)
        for wire in (idle, busy, broker_to_broker):
            wire.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_failed_login_is_answered_after_the_delay_while_others_are_served() -> None:
    security = Security(protocol="SASL_PLAINTEXT", mechanisms=("PLAIN",))
    config = {"connection.failed.authentication.delay.ms": 2000}
    with Broker(process=True, security=security, config=config) as broker:
        host, port = broker.bootstrap_servers.rsplit(":", 1)
        with KafkaWire(host, int(port)) as wire:
            assert wire.request(SaslHandshakeRequest(mechanism="PLAIN")).error_code == 0
            begin = time.monotonic()
            wire.send(SaslAuthenticateRequest(auth_bytes=b"\0alice\0wrong"))
            producer = Producer({"bootstrap.servers": broker.bootstrap_servers,
                                 **broker.security.client_config("alice")})  # type: ignore[union-attr]  # fmt: skip
            producer.produce(broker.create_topic(), b"served meanwhile")
            assert producer.flush(10) == 0
            served_at = time.monotonic() - begin
            _, answer = wire.read_response(api_key=36, api_version=1)
            answered_at = time.monotonic() - begin
            assert answer.error_code == 58  # SASL_AUTHENTICATION_FAILED
            assert wire.is_closed_by_peer()
        assert served_at < 2.0 <= answered_at + 0.05
