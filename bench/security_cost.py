"""What security costs a broker: the same produce and consume on a PLAINTEXT broker and on one
with everything on, in the same run (issue 26 part 1's goal: within 0.8x of the plain broker).

The secured broker (``strom.testing.Broker(process=True, security=...)``) has a SASL_SSL
listener with SCRAM-SHA-512 and generated certificates (``--protocol SASL_PLAINTEXT``: no TLS,
to tell its share from the rest), the StandardAuthorizer with
``allow.everyone.if.no.acl.found=false``, and the client is ``alice``, no super user: ACLs allow
her WRITE, READ and DESCRIBE on the topics and READ on the group, so every request is judged
against them; a user quota (``producer_byte_rate``, ``consumer_byte_rate``,
``request_percentage``) far above what the machine can move, so each request is measured
against it and never throttled. Both brokers are child processes started together.

Each round, per broker (alternating which goes first): ``--records`` records of ``--size``
bytes produced with confluent-kafka (acks=all, linger.ms 5, batches up to 1 MB) into a
3-partition topic, timed from the first send to the last delivery; then read back from the
beginning by assignment, timed to the last record. Prints MB/s and the broker's CPU seconds
per GB for each, and the ratios (secured / plain) of the medians.

Run: ``.venv/bin/python -m bench.security_cost [--records 300000] [--size 1000] [--rounds 3]
[--protocol SASL_SSL|SASL_PLAINTEXT]``.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)
from confluent_kafka.cimpl import NewTopic

from bench.compare import cpu_seconds
from strom.testing import Broker
from strom.testing.security import Security

PARTITIONS = 3
PREFIX = "bench-"
GROUP = "bench-security"
USER, PASSWORD = "alice", "alice-secret"
UNREACHABLE_RATE = 1 << 40
"""Bytes a second no broker here can reach: the quota is checked, never enforced."""


@contextmanager
def plain_broker() -> Iterator[tuple[Broker, dict[str, Any]]]:
    with Broker(process=True) as broker:
        yield broker, broker.producer_config()


@contextmanager
def secured_broker(protocol: str = "SASL_SSL") -> Iterator[tuple[Broker, dict[str, Any]]]:
    security = Security(
        protocol=protocol,
        mechanisms=("SCRAM-SHA-512",),
        users={"admin": "admin-secret", USER: PASSWORD},
    )
    config = {
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
        "allow.everyone.if.no.acl.found": "false",
    }
    with Broker(process=True, security=security, config=config) as broker:
        assert broker.security is not None
        allow(broker.admin_config())
        limit(broker, broker.admin_config())
        alice = broker.security.client_config(USER)
        yield broker, {"bootstrap.servers": broker.bootstrap_servers, **alice}


def allow(admin_config: dict[str, Any]) -> None:
    """Alice may write, read and describe the bench's topics and read its group."""
    rules = [
        (ResourceType.TOPIC, PREFIX, operation)
        for operation in (AclOperation.WRITE, AclOperation.READ, AclOperation.DESCRIBE)
    ] + [(ResourceType.GROUP, PREFIX, AclOperation.READ)]
    admin = AdminClient(admin_config)
    principal, allowed = f"User:{USER}", AclPermissionType.ALLOW
    bindings = [
        AclBinding(kind, name, ResourcePatternType.PREFIXED, principal, "*", operation, allowed)
        for kind, name, operation in rules
    ]
    for future in admin.create_acls(bindings).values():
        future.result(30)


def limit(broker: Broker, admin_settings: dict[str, Any]) -> None:
    """Give alice a quota no run reaches, with ``strom configs`` (librdkafka's names in its
    ``--command-config``)."""
    with tempfile.NamedTemporaryFile("w", suffix=".properties", delete=False) as file:
        for name, value in admin_settings.items():
            file.write(f"{name}={value}\n")
    rates = f"producer_byte_rate={UNREACHABLE_RATE},consumer_byte_rate={UNREACHABLE_RATE}"
    subprocess.run(
        [sys.executable, "-m", "strom", "configs", "alter", "--user", USER,
         "--add-config", f"{rates},request_percentage=10000",
         "--bootstrap-server", broker.bootstrap_servers, "--command-config", file.name],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    Path(file.name).unlink()


def create_topic(admin_config: dict[str, Any], name: str) -> None:
    admin = AdminClient(admin_config)
    admin.create_topics([NewTopic(name, PARTITIONS, 1)])[name].result(30)


def produce(client: dict[str, Any], topic: str, records: int, size: int) -> float:
    """Seconds to send ``records`` and have every one acknowledged."""
    producer = Producer(
        {**client, "acks": "all", "linger.ms": 5, "batch.size": 1_000_000,
         "queue.buffering.max.messages": 1_000_000}
    )  # fmt: skip
    value = b"x" * size
    started = time.monotonic()
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, value)
                break
            except BufferError:
                producer.poll(0.005)
    if producer.flush(300):
        raise RuntimeError(f"{topic}: records not acknowledged")
    return time.monotonic() - started


def consume(client: dict[str, Any], topic: str, records: int) -> float:
    """Seconds to read ``records`` from the beginning of ``topic``."""
    consumer = Consumer(
        {**client, "group.id": GROUP, "enable.auto.commit": False,
         "fetch.max.bytes": 52_428_800, "max.partition.fetch.bytes": 10_485_760}
    )  # fmt: skip
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    started, seen = time.monotonic(), 0
    while seen < records:
        for message in consumer.consume(10_000, timeout=1):
            if message.error() is None:
                seen += 1
        if time.monotonic() - started > 300:
            raise RuntimeError(f"{topic}: read {seen} of {records}")
    elapsed = time.monotonic() - started
    consumer.close()
    return elapsed


Figure = tuple[float, float]
"""MB/s, and the broker's CPU seconds per GB."""


def timed(broker: Broker, work: Callable[[], float], megabytes: float) -> Figure:
    assert broker.pid is not None
    cpu = cpu_seconds(broker.pid)
    seconds = work()
    return megabytes / seconds, (cpu_seconds(broker.pid) - cpu) / (megabytes / 1024)


def one_round(
    broker: Broker, client: dict[str, Any], topic: str, records: int, size: int
) -> dict[str, Figure]:
    """Produce ``records`` into a new ``topic``, then read them back."""
    create_topic(broker.admin_config(), topic)
    megabytes = records * size / (1 << 20)
    return {
        "produce": timed(broker, partial(produce, client, topic, records, size), megabytes),
        "consume": timed(broker, partial(consume, client, topic, records), megabytes),
    }


def report(figures: dict[str, list[dict[str, Figure]]]) -> None:
    """The medians of each broker's rounds, and their ratios."""
    print(
        f"{'workload':<9} {'plain MB/s':>11} {'secured MB/s':>13} {'ratio':>6} {'goal':>6} "
        f"{'plain CPU s/GB':>15} {'secured CPU s/GB':>17}"
    )
    for work in ("produce", "consume"):
        plain, secured = (
            [statistics.median(r[work][i] for r in figures[name]) for i in (0, 1)]
            for name in ("plain", "secured")
        )
        ratio = secured[0] / plain[0]
        print(
            f"{work:<9} {plain[0]:>11.1f} {secured[0]:>13.1f} {ratio:>6.2f} "
            f"{'met' if ratio >= 0.8 else 'no':>6} {plain[1]:>15.2f} {secured[1]:>17.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=300_000)
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--protocol",
        choices=("SASL_SSL", "SASL_PLAINTEXT"),
        default="SASL_SSL",
        help="the secured listener's (SASL_PLAINTEXT: ACLs and quotas without TLS's share)",
    )
    args = parser.parse_args()
    figures: dict[str, list[dict[str, Figure]]] = {"plain": [], "secured": []}
    with ExitStack() as stack:
        brokers = {
            "plain": stack.enter_context(plain_broker()),
            "secured": stack.enter_context(secured_broker(args.protocol)),
        }
        for broker, client in brokers.values():  # warm up: schemas, first connections
            one_round(broker, client, f"{PREFIX}warm", 10_000, args.size)
        print(f"{args.records:,} records of {args.size} B, secured {args.protocol}:")
        for number in range(args.rounds):
            order = ("plain", "secured") if number % 2 == 0 else ("secured", "plain")
            for name in order:
                broker, client = brokers[name]
                figures[name].append(
                    one_round(broker, client, f"{PREFIX}{number}", args.records, args.size)
                )
            print(
                f"round {number + 1}: "
                + "  ".join(
                    f"{name} {work} {figures[name][-1][work][0]:.1f} MB/s "
                    f"({figures[name][-1][work][1]:.2f} CPU s/GB)"
                    for name in ("plain", "secured")
                    for work in ("produce", "consume")
                )
            )
    report(figures)


if __name__ == "__main__":
    main()
