"""The I/O shell of one of the worker's internal topics (configs, offsets, status): created
compacted with the settings' partitions and replication factor, replayed from its start by a
thread that hands every record to ``apply``, and written by an idempotent producer. A write
returns once this worker read its own records back, so a reply reflects what the topic says,
as Kafka Connect's ``KafkaBasedLog`` does for its config topic."""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from strom.connect.errors import ConnectError

__all__ = ["TopicLog"]

log = logging.getLogger(__name__)

Apply = Callable[[bytes | None, bytes | None], None]


class TopicLog:
    """Replays and appends to one compacted topic of ``partitions`` partitions."""

    def __init__(
        self,
        *,
        topic: str,
        partitions: int,
        replication_factor: int,
        client: dict[str, Any],
        apply: Apply,
        lock: threading.Lock,
        timeout: float = 30.0,
    ) -> None:
        self.topic = topic
        self.partitions = partitions
        self.replication_factor = replication_factor
        self.timeout = timeout
        self._client = client
        self._apply = apply
        self._lock = lock
        self._applied = threading.Condition()
        self._positions: dict[int, int] = {}
        self._stopping = threading.Event()
        self._reader: threading.Thread | None = None
        self._producer: Producer | None = None
        self._watermarks: Consumer | None = None

    def start(self) -> None:
        """Create the topic if needed, then replay it to its end before returning."""
        self._ensure_topic()
        consumer = Consumer(
            {
                **self._client,
                "group.id": f"connect-log-reader-{uuid.uuid4().hex}",
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 100,
            }
        )
        metadata = consumer.list_topics(self.topic, timeout=self.timeout)
        self.partitions = len(metadata.topics[self.topic].partitions)  # an existing topic's own
        consumer.assign(
            [KafkaTopicPartition(self.topic, p, OFFSET_BEGINNING) for p in range(self.partitions)]
        )
        self._watermarks = Consumer({**self._client, "group.id": "connect-log-watermarks"})
        self._reader = threading.Thread(
            target=self._read, args=(consumer,), name=f"log-{self.topic}", daemon=True
        )
        self._reader.start()
        self.catch_up()

    def stop(self) -> None:
        self._stopping.set()
        if self._reader is not None:
            self._reader.join(timeout=10)
        if self._producer is not None:
            self._producer.flush(5)
            self._producer = None
        if self._watermarks is not None:
            self._watermarks.close()
            self._watermarks = None

    def _ensure_topic(self) -> None:
        admin = AdminClient(self._client)
        deadline = time.monotonic() + self.timeout
        while True:
            metadata = admin.list_topics(timeout=self.timeout)
            if self.topic in metadata.topics and not metadata.topics[self.topic].error:
                return
            brokers = max(1, len(metadata.brokers))
            factor = self.replication_factor
            if factor == -1:  # the broker's default.replication.factor
                factor = min(3, brokers)
            elif factor > brokers:
                log.warning(
                    "%s: replication factor %d, but the cluster has %d broker(s): creating it"
                    " with %d",
                    self.topic,
                    factor,
                    brokers,
                    brokers,
                )
                factor = brokers
            topic = NewTopic(
                self.topic,
                num_partitions=self.partitions,
                replication_factor=factor,
                config={"cleanup.policy": "compact"},
            )
            try:
                admin.create_topics([topic])[self.topic].result(timeout=self.timeout)
                return
            except KafkaException as error:
                if error.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
                    return
                if time.monotonic() > deadline:
                    raise

    def _read(self, consumer: Consumer) -> None:
        try:
            while not self._stopping.is_set():
                message = consumer.poll(0.2)
                if message is None:
                    continue
                if message.error():
                    log.warning("reading %s: %s", self.topic, message.error())
                    continue
                try:
                    with self._lock:
                        self._apply(message.key(), message.value())
                except Exception:
                    log.exception(
                        "%s: cannot apply the record at offset %s", self.topic, message.offset()
                    )
                with self._applied:
                    self._positions[message.partition() or 0] = (message.offset() or 0) + 1
                    self._applied.notify_all()
        finally:
            consumer.close()

    def end_offsets(self) -> dict[int, int]:
        """Each partition's current end (high watermark)."""
        assert self._watermarks is not None, "the log is not started"
        ends = {}
        for partition in range(self.partitions):
            _, high = self._watermarks.get_watermark_offsets(
                KafkaTopicPartition(self.topic, partition), timeout=self.timeout
            )
            ends[partition] = int(high)
        return ends

    def catch_up(self, targets: dict[int, int] | None = None) -> None:
        """Wait until every record before ``targets`` (default: the ends now) is applied."""
        wanted = self.end_offsets() if targets is None else targets
        with self._applied:
            if not self._applied.wait_for(
                lambda: all(self._positions.get(p, 0) >= o for p, o in wanted.items() if o > 0),
                self.timeout,
            ):
                raise ConnectError(
                    500, f"Timed out waiting for the {self.topic} topic to be read to its end"
                )

    def write(self, records: Iterable[tuple[bytes, bytes | None]]) -> None:
        """Append records (key, value or None for a tombstone) and wait until they are read
        back and applied."""
        if self._producer is None:
            self._producer = Producer(
                {
                    **self._client,
                    "enable.idempotence": True,
                    "acks": "all",
                    "linger.ms": 0,
                    "partitioner": "murmur2_random",  # the Java producer's, as Connect's
                }
            )
        last: dict[int, int] = {}
        failures: list[KafkaError] = []

        def delivered(error: KafkaError | None, message: Any) -> None:
            if error is not None:
                failures.append(error)
            else:
                last[message.partition()] = max(
                    last.get(message.partition(), 0), message.offset() + 1
                )

        for key, value in records:
            self._producer.produce(self.topic, value, key, on_delivery=delivered)
        self._producer.flush(self.timeout)
        if failures:
            raise ConnectError(500, f"Error writing to the {self.topic} topic: {failures[0]}")
        self.catch_up(last)
