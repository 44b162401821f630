"""A consume-transform-produce loop with Kafka transactions, run as a child process.

``python txn_loop.py BOOTSTRAP INPUT OUTPUT GROUP TRANSACTIONAL_ID``: reads INPUT from the group's
committed offsets (read_committed), writes each value upper-cased to OUTPUT with the input's
offset as key, and commits the output and the input offsets in one transaction per poll. It prints
``committed N`` after each transaction and exits when it has seen nothing new for two seconds.
The tests kill it with SIGKILL at random points and start it again.
"""

from __future__ import annotations

import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition

IDLE_EXIT_SECONDS = 2.0


def run(bootstrap: str, source: str, sink: str, group: str, transactional_id: str) -> None:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": transactional_id,
            "transaction.timeout.ms": 10_000,
            "linger.ms": 5,
        }
    )
    producer.init_transactions(30)
    partitions = consumer.list_topics(source, timeout=10).topics[source].partitions
    consumer.assign([TopicPartition(source, p) for p in partitions])  # stored (committed) offsets
    idle_since = time.monotonic()
    while time.monotonic() - idle_since < IDLE_EXIT_SECONDS:
        messages = [m for m in consumer.consume(50, timeout=0.2) if m.error() is None]
        if not messages:
            continue
        idle_since = time.monotonic()
        producer.begin_transaction()
        for message in messages:
            key = f"{message.partition()}:{message.offset()}".encode()
            producer.produce(sink, key=key, value=(message.value() or b"").upper())
        producer.send_offsets_to_transaction(
            consumer.position(consumer.assignment()), consumer.consumer_group_metadata(), 30
        )
        producer.commit_transaction(30)
        print(f"committed {len(messages)}", flush=True)
    consumer.close()


if __name__ == "__main__":
    run(*sys.argv[1:6])
