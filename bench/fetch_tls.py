"""Consuming over PLAINTEXT (file regions go out with sendfile) against SSL and SASL_SSL (the
regions are read and copied into the TLS stream).

Each protocol gets a ``strom server`` child process of its own (``strom.testing.Broker``, the
secured ones with generated certificates); ``--megabytes`` of 16 KB records (large, so that the
consumer's per-record work does not hide the broker's) are produced into a
one-partition topic, then a confluent-kafka consumer reads them all from the start, timed from
subscribe to the last record. Prints MB/s, best of ``--runs``.
Run: ``.venv/bin/python -m bench.fetch_tls [--megabytes 256] [--runs 3]``.
"""

from __future__ import annotations

import argparse
import time

from confluent_kafka import Consumer, Producer

from strom.testing import Broker
from strom.testing.security import Security

RECORD = b"x" * 16384


def fill(broker: Broker, topic: str, count: int) -> None:
    producer = Producer(broker.producer_config(**{"linger.ms": 20, "batch.size": 1_000_000}))
    for _ in range(count):
        while True:
            try:
                producer.produce(topic, RECORD)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(120) == 0


def consume_seconds(broker: Broker, topic: str, count: int) -> float:
    consumer = Consumer(
        {**broker.consumer_config(), "fetch.max.bytes": 52_428_800, "enable.auto.commit": False}
    )
    started = time.monotonic()
    consumer.subscribe([topic])
    seen = 0
    while seen < count:
        for message in consumer.consume(10_000, timeout=1):
            if message.error() is None:
                seen += 1
    elapsed = time.monotonic() - started
    consumer.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=256)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    count = args.megabytes * 1024 * 1024 // len(RECORD)
    print(f"{'listener':<16} {'consume MB/s (best)':>20} {'all runs':>28}")
    for label, security in (
        ("PLAINTEXT", None),
        ("SSL", Security(protocol="SSL")),
        ("SASL_SSL PLAIN", Security(protocol="SASL_SSL")),
    ):
        with Broker(process=True, security=security) as broker:
            topic = broker.create_topic()
            fill(broker, topic, count)
            rates = [
                args.megabytes / consume_seconds(broker, topic, count) for _ in range(args.runs)
            ]
        runs = " / ".join(f"{rate:.0f}" for rate in rates)
        print(f"{label:<16} {max(rates):>20.0f} {runs:>28}")


if __name__ == "__main__":
    main()
