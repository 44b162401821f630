"""A confluent-kafka producer (idempotent, acks=all) and consumer that run while replicas move,
and the checks the balancing tests make afterwards: no client saw an error, every record sent
was read, replica and leader counts per broker are within 10% of even."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from strom.testing import Cluster

__all__ = ["Clients", "assignment", "create", "uneven"]


def assignment(admin: AdminClient) -> dict[tuple[str, int], tuple[list[int], int]]:
    """Each partition's replicas and leader, internal topics included."""
    topics = admin.list_topics(timeout=10).topics
    return {
        (name, p.id): (list(p.replicas), p.leader)
        for name, topic in topics.items()
        for p in topic.partitions.values()
    }


def create(admin: AdminClient, topic: NewTopic) -> None:
    """Create ``topic``; a retried CreateTopics on a loaded machine may find it made already."""
    try:
        admin.create_topics([topic])[topic.topic].result(20)
    except KafkaException as error:
        if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise


def uneven(admin: AdminClient, brokers: Iterable[int]) -> list[Counter[int]]:
    """The replica and leader counts per broker that are not within 10% of even (at least one
    apart is allowed): none when the cluster is balanced."""
    ids = list(brokers)
    placed = assignment(admin)
    replicas = Counter(b for reps, _ in placed.values() for b in reps)
    leaders = Counter(leader for _, leader in placed.values())
    out = []
    for counts in (replicas, leaders):
        average = sum(counts.values()) / len(ids)
        if any(abs(counts[b] - average) > max(0.1 * average, 1) for b in ids):
            out.append(counts)
    return out


class Clients:
    """Produces increasing numbers to ``topic`` and consumes them, each in a thread."""

    def __init__(self, servers: str, topic: str) -> None:
        self.topic = topic
        self.errors: list[str] = []
        self.sent: list[int] = []
        self.acked: set[int] = set()
        self.undelivered = 0
        """Records still unanswered when the producer gave up waiting (flush's count)."""
        self.seen: set[int] = set()
        self._producer = Producer(
            {"bootstrap.servers": servers, "acks": "all", "enable.idempotence": True}
        )
        self._consumer = Consumer(
            {"bootstrap.servers": servers, "group.id": topic, "auto.offset.reset": "earliest"}
        )
        self._consumer.subscribe([topic])
        self._stop_producing = threading.Event()
        self._stop_consuming = threading.Event()
        self._threads = [
            threading.Thread(target=self._produce, daemon=True),
            threading.Thread(target=self._consume, daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def _delivered(self, error: KafkaError | None, message: Message) -> None:
        if error is not None:
            self.errors.append(str(error))
        else:
            self.acked.add(int(message.value() or b"-1"))

    def _produce(self) -> None:
        value = 0
        while not self._stop_producing.is_set():
            self._producer.produce(self.topic, str(value).encode(), on_delivery=self._delivered)
            self.sent.append(value)
            value += 1
            self._producer.poll(0.002)
        self.undelivered = self._producer.flush(30)

    def _consume(self) -> None:
        while not self._stop_consuming.is_set():
            message = self._consumer.poll(0.2)
            if message is None:
                continue
            if message.error() is not None:
                self.errors.append(str(message.error()))
                continue
            self.seen.add(int(message.value() or b"-1"))

    def stop_producing(self) -> None:
        self._stop_producing.set()
        self._threads[0].join(60)

    def close(self) -> None:
        """Stop both threads (a failed test's way out too)."""
        self.stop_producing()
        if not self._stop_consuming.is_set():
            self._stop_consuming.set()
            self._threads[1].join(10)
            self._consumer.close()

    def finish(self, cluster: Cluster) -> None:
        """Stop producing, read everything sent, stop; no error and nothing lost."""
        self.stop_producing()
        try:
            cluster.wait_for(
                lambda: set(self.sent) <= self.seen, timeout=30, what="every record consumed"
            )
        finally:
            self.close()
        assert (self.errors, self.undelivered) == ([], 0)
        assert self.acked == set(self.sent)
