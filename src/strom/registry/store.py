"""The Kafka side of the registry: the ``_schemas`` topic, read from its start by a thread that
applies every record to the ``RegistryState``, and written by the primary through an idempotent
producer. A write returns once this instance has read its own records back, so a reply always
reflects the write (read-your-writes), exactly as every other instance will see it."""

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

from strom.registry.errors import RegistryError
from strom.registry.records import Record

__all__ = ["SchemaStore"]

log = logging.getLogger(__name__)


class SchemaStore:
    """Replays and appends to one single-partition, compacted topic."""

    def __init__(
        self,
        *,
        bootstrap_servers: str,
        topic: str,
        apply: Callable[[Record], None],
        lock: threading.Lock,
        client_config: dict[str, Any] | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.topic = topic
        self.timeout = timeout
        self._apply = apply
        self._lock = lock
        self._clients = {"bootstrap.servers": bootstrap_servers, **(client_config or {})}
        self._applied = threading.Condition()
        self._position = 0
        """The offset after the last record applied."""
        self._stopping = threading.Event()
        self._reader: threading.Thread | None = None
        self._producer: Producer | None = None
        self._watermarks: Consumer | None = None
        self._watermarks_lock = threading.Lock()

    def start(self) -> None:
        """Create the topic if needed, then replay it to its end before returning."""
        self._ensure_topic()
        consumer = Consumer(
            {
                **self._clients,
                "group.id": f"schema-registry-reader-{uuid.uuid4().hex}",
                "enable.auto.commit": False,
                "enable.partition.eof": False,
                "fetch.wait.max.ms": 100,
            }
        )
        consumer.assign([KafkaTopicPartition(self.topic, 0, OFFSET_BEGINNING)])
        self._reader = threading.Thread(
            target=self._read, args=(consumer,), name="schemas-reader", daemon=True
        )
        self._reader.start()
        self.catch_up()

    def stop(self) -> None:
        self._stopping.set()
        if self._reader is not None:
            self._reader.join(timeout=10)
        if self._producer is not None:
            self._producer.flush(5)
            self._producer = None  # librdkafka's handle goes with the last reference
        if self._watermarks is not None:
            self._watermarks.close()
            self._watermarks = None

    def _ensure_topic(self) -> None:
        admin = AdminClient(self._clients)
        deadline = time.monotonic() + self.timeout
        while True:
            metadata = admin.list_topics(timeout=self.timeout)
            if self.topic in metadata.topics and not metadata.topics[self.topic].error:
                return
            brokers = max(1, len(metadata.brokers))
            topic = NewTopic(
                self.topic,
                num_partitions=1,
                replication_factor=min(3, brokers),
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
                record = Record.decode(message.key() or b"", message.value())
                with self._lock:
                    if record is not None:
                        self._apply(record)
                with self._applied:
                    self._position = (message.offset() or 0) + 1
                    self._applied.notify_all()
        finally:
            consumer.close()

    def end_offset(self) -> int:
        """The topic's current end (high watermark)."""
        with self._watermarks_lock:
            if self._watermarks is None:
                self._watermarks = Consumer(
                    {**self._clients, "group.id": "schema-registry-watermarks"}
                )
            _, high = self._watermarks.get_watermark_offsets(
                KafkaTopicPartition(self.topic, 0), timeout=self.timeout
            )
            return int(high)

    def catch_up(self, offset: int | None = None) -> None:
        """Wait until every record before ``offset`` (default: the end now) is applied."""
        target = self.end_offset() if offset is None else offset
        with self._applied:
            if not self._applied.wait_for(lambda: self._position >= target, self.timeout):
                raise RegistryError.timeout(
                    f"Write to the Kafka store timed out while waiting for offset {target}"
                )

    def write(self, records: Iterable[Record]) -> None:
        """Append records and wait until they are read back and applied."""
        if self._producer is None:
            self._producer = Producer(
                {**self._clients, "enable.idempotence": True, "acks": "all", "linger.ms": 0}
            )
        last: list[int] = []
        failures: list[KafkaError] = []

        def delivered(error: KafkaError | None, message: Any) -> None:
            if error is not None:
                failures.append(error)
            else:
                last.append(message.offset())

        for record in records:
            key, value = record.encode()
            self._producer.produce(self.topic, value, key, partition=0, on_delivery=delivered)
        self._producer.flush(self.timeout)
        if failures or not last:
            raise RegistryError.store_error(f"Error while writing to the Kafka store: {failures}")
        self.catch_up(max(last) + 1)
