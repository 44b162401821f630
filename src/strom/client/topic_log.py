"""One compacted topic as a service's state (Kafka Connect's ``KafkaBasedLog``; the schema
registry's ``KafkaStore``): created if missing, replayed from its start by a thread that hands
every record to ``apply``, and written by an idempotent producer. A write returns once this
process has read its own records back, so a reply reflects what the topic says, as every other
reader of it will see it. It reads committed records only (librdkafka's default): records
written in transactions (Connect's exactly-once sources) count once committed."""

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

__all__ = ["BROKER_DEFAULT_FACTOR", "Apply", "TopicLog", "TopicLogTimeout", "TopicLogWriteFailed"]

log = logging.getLogger(__name__)

Apply = Callable[[bytes | None, bytes | None], None]

BROKER_DEFAULT_FACTOR = -1
"""A replication factor of three, or of every broker where there are fewer."""


class TopicLogTimeout(TimeoutError):
    """The topic was not read up to the offsets waited for within the timeout."""


class TopicLogWriteFailed(RuntimeError):
    """The producer could not write the records."""


class TopicLog:
    """Replays and appends to one compacted topic of ``partitions`` partitions (an existing
    topic keeps its own count)."""

    def __init__(
        self,
        *,
        topic: str,
        client: dict[str, Any],
        apply: Apply,
        lock: threading.Lock,
        partitions: int = 1,
        replication_factor: int = BROKER_DEFAULT_FACTOR,
        producer: dict[str, Any] | None = None,
        timeout: float = 30.0,
        read_timeout: float | None = None,
    ) -> None:
        self.topic = topic
        self.partitions = partitions
        self.replication_factor = replication_factor
        self.timeout = timeout
        """How long a client call waits (creating the topic, producing, watermarks)."""
        self.read_timeout = timeout if read_timeout is None else read_timeout
        """How long ``catch_up`` waits for the reader to apply the records."""
        self._client = client
        self._producer_config = producer or {}
        self._apply = apply
        self._lock = lock
        self._applied = threading.Condition()
        self._positions: dict[int, int] = {}
        """Each partition's offset after the last record applied."""
        self._stopping = threading.Event()
        self._reader: threading.Thread | None = None
        self._producer: Producer | None = None
        self._watermarks: Consumer | None = None
        self._watermarks_lock = threading.Lock()

    def start(self) -> None:
        """Create the topic if needed, then replay it to its end before returning."""
        self.open()
        self.catch_up()

    def open(self) -> None:
        """Create the topic if needed and start replaying it (``start`` without the wait)."""
        self._ensure_topic()
        consumer = Consumer(
            {
                **self._client,
                "group.id": f"{self.topic}-reader-{uuid.uuid4().hex}",
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 100,
            }
        )
        metadata = consumer.list_topics(self.topic, timeout=self.timeout)
        self.partitions = len(metadata.topics[self.topic].partitions)
        consumer.assign(
            [KafkaTopicPartition(self.topic, p, OFFSET_BEGINNING) for p in range(self.partitions)]
        )
        self._watermarks = Consumer({**self._client, "group.id": f"{self.topic}-watermarks"})
        self._reader = threading.Thread(
            target=self._read, args=(consumer,), name=f"log-{self.topic}", daemon=True
        )
        self._reader.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._reader is not None:
            self._reader.join(timeout=10)
        if self._producer is not None:
            self._producer.flush(5)
            self._producer = None  # librdkafka's handle goes with the last reference
        with self._watermarks_lock:
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
            if factor == BROKER_DEFAULT_FACTOR:
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
                    self._past_markers(consumer)
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

    def _past_markers(self, consumer: Consumer) -> None:
        """When idle, take the consumer's positions: past the last record applied, they count
        a transaction's commit marker (or records it aborted), which the end offsets include
        and no message shows."""
        found = consumer.position(consumer.assignment())
        with self._applied:
            moved = False
            for tp in found:
                if tp.offset > self._positions.get(tp.partition, 0):
                    self._positions[tp.partition] = tp.offset
                    moved = True
            if moved:
                self._applied.notify_all()

    def positions(self) -> dict[int, int]:
        """Each partition's offset after the last record applied."""
        with self._applied:
            return dict(self._positions)

    def end_offsets(self) -> dict[int, int]:
        """Each partition's current end (high watermark)."""
        ends = {}
        with self._watermarks_lock:
            assert self._watermarks is not None, "the log is not started"
            for partition in range(self.partitions):
                _, high = self._watermarks.get_watermark_offsets(
                    KafkaTopicPartition(self.topic, partition), timeout=self.timeout
                )
                ends[partition] = int(high)
        return ends

    def catch_up(self, targets: dict[int, int] | None = None) -> None:
        """Wait (up to ``read_timeout``) until every record before ``targets`` (default: the
        ends now) is applied, or raise :class:`TopicLogTimeout` (also when the ends cannot be
        learnt in time: a loaded or unreachable broker)."""
        try:
            wanted = self.end_offsets() if targets is None else targets
        except KafkaException as error:
            raise TopicLogTimeout({}) from error
        with self._applied:
            if not self._applied.wait_for(
                lambda: all(self._positions.get(p, 0) >= o for p, o in wanted.items() if o > 0),
                self.read_timeout,
            ):
                raise TopicLogTimeout(wanted)

    def write(self, records: Iterable[tuple[bytes, bytes | None]]) -> dict[int, int]:
        """Append records (key, value or None for a tombstone), wait until they are read back
        and applied, and return each written partition's offset after them; raise
        :class:`TopicLogWriteFailed` when the producer cannot write them."""
        if self._producer is None:
            self._producer = Producer(
                {
                    **self._client,
                    "enable.idempotence": True,
                    "acks": "all",
                    "linger.ms": 0,
                    **self._producer_config,
                }
            )
        last: dict[int, int] = {}
        failures: list[KafkaError] = []

        def delivered(error: KafkaError | None, message: Any) -> None:
            if error is not None:
                failures.append(error)
            else:
                partition = message.partition()
                last[partition] = max(last.get(partition, 0), message.offset() + 1)

        for key, value in records:
            self._producer.produce(self.topic, value, key, on_delivery=delivered)
        undelivered = self._producer.flush(self.timeout)
        if failures or undelivered:
            raise TopicLogWriteFailed(failures[0] if failures else "the producer timed out")
        self.catch_up(last)
        return last
