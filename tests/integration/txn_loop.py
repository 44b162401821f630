"""A consume-transform-produce loop with Kafka transactions, run as a child process.

``python txn_loop.py BOOTSTRAP INPUT OUTPUT GROUP TRANSACTIONAL_ID [CRASH]``: reads INPUT from the
group's committed offsets (read_committed), writes each value upper-cased to OUTPUT with the
input's offset as key, and commits the output and the input offsets in one transaction per poll.
It prints ``committed N`` after each transaction and exits when it has seen nothing new for two
seconds.

``CRASH`` is ``<transactions>:<step>``: once that many transactions are committed, the loop
SIGKILLs itself at ``step`` of the next one (``STEPS``), as an outside kill at that point of its
program would. The tests draw crash points from a seed, so a run can be replayed.
"""

from __future__ import annotations

import os
import signal
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition

IDLE_EXIT_SECONDS = 2.0
STEPS = ("begun", "produced", "flushed", "offsets-sent", "committed")
"""Where in a transaction the loop can crash: after begin_transaction, after producing its records
(some may still be queued in the client), after flushing them, after sending the input offsets,
after commit_transaction."""


class Crash:
    """SIGKILL this process at ``step`` of the transaction after ``transactions`` committed."""

    def __init__(self, spec: str | None) -> None:
        transactions, _, step = (spec or "-1:").partition(":")
        self.transactions = int(transactions)
        self.step = step
        self.committed = 0

    def at(self, step: str) -> None:
        if self.committed == self.transactions and step == self.step:
            os.kill(os.getpid(), signal.SIGKILL)
        if step == "committed":
            self.committed += 1


def run(
    bootstrap: str, source: str, sink: str, group: str, transactional_id: str, crash: Crash
) -> None:
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
        crash.at("begun")
        for message in messages:
            key = f"{message.partition()}:{message.offset()}".encode()
            producer.produce(sink, key=key, value=(message.value() or b"").upper())
        crash.at("produced")
        producer.flush(30)
        crash.at("flushed")
        producer.send_offsets_to_transaction(
            consumer.position(consumer.assignment()), consumer.consumer_group_metadata(), 30
        )
        crash.at("offsets-sent")
        producer.commit_transaction(30)
        print(f"committed {len(messages)}", flush=True)
        crash.at("committed")
    consumer.close()


if __name__ == "__main__":
    bootstrap, source, sink, group, transactional_id = sys.argv[1:6]
    crash = Crash(sys.argv[6] if len(sys.argv) > 6 else None)
    run(bootstrap, source, sink, group, transactional_id, crash)
