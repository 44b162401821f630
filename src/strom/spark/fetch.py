"""Reading one offset range of one partition, on an executor, and reporting data loss.

A Spark task reads ``[start, end)`` of a partition with Fetch requests to the partition's
leader (``strom.client.blocking``, the next request always in flight while an answer is
decoded), and ``record_columns`` turns each answer's record batches into Arrow record batches
without a Python object per record. A confluent-kafka Consumer answers what is not on the hot
path: the partition's leader and its log start offset. When the query's TLS or SASL settings
are ones only librdkafka honours (``fetch_security`` says which), the task consumes through
that Consumer instead, as the source did before (``_Consume``, slower).

Offsets missing inside the range are not loss: the cleaner compacted records away, or they
were transaction markers or aborted records. Loss is when the range starts below the
partition's log start offset (retention or DeleteRecords took offsets the query still needed):
it is reported with the exact lost offsets, as an error with ``failOnDataLoss`` (the default)
or as a warning without.
"""

from __future__ import annotations

import datetime
import gc
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message
from confluent_kafka import TopicPartition as KafkaTopicPartition
from kio.schema.errors import ErrorCode
from kio.schema.fetch.v12.request import FetchPartition, FetchRequest, FetchTopic
from kio.schema.types import TopicName
from kio.static.primitive import i8, i32, i32Timedelta, i64

from strom.client.blocking import BrokerConnection
from strom.client.security import ClientSecurity, librdkafka_security
from strom.protocol import fetch_answer
from strom.spark.cluster import consumer_settings
from strom.spark.offsets import OffsetRange
from strom.spark.record_columns import Kept, RecordColumns
from strom.spark.schema import RecordBatchBuilder, arrow_schema

__all__ = [
    "DataLossError",
    "FetchSettings",
    "fetch_security",
    "log_read_path",
    "lost_offsets",
    "read_range",
    "report_data_loss",
]

log = logging.getLogger("strom.spark")

_RETRY_S = 0.1
_POLL_S = 0.2
_GONE = frozenset({KafkaError.OFFSET_OUT_OF_RANGE, KafkaError._AUTO_OFFSET_RESET})
DEFAULT_PARTITION_FETCH_BYTES = 8 * 1024 * 1024
"""A task's bytes per Fetch unless ``kafka.max.partition.fetch.bytes`` says otherwise: Kafka's
1 MB default costs a round trip and a decode per ~1,000 1 KB records, which took ~40% more
time than 8 MB answers (docs/benchmarks.md, "Spark source")."""
_RETRIABLE = frozenset(
    {
        ErrorCode.not_leader_or_follower,
        ErrorCode.leader_not_available,
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.fenced_leader_epoch,
        ErrorCode.unknown_leader_epoch,
        ErrorCode.replica_not_available,
        ErrorCode.kafka_storage_error,
        ErrorCode.offset_not_available,
    }
)
"""Errors that a new leader lookup and another try can clear (Kafka's consumer retries them)."""


class DataLossError(RuntimeError):
    """Offsets the query needed are gone from the cluster (``failOnDataLoss`` is true)."""


@dataclass(frozen=True)
class FetchSettings:
    """What a task needs to read a range; plain data, pickled to executors."""

    client: dict[str, str]
    include_headers: bool
    fail_on_data_loss: bool
    poll_timeout_ms: int
    api_timeout_ms: int
    fetch_records: int


def lost_offsets(topic: str, partition: int, start: int, end: int) -> str:
    """How a lost range is named in errors and warnings."""
    return f"offsets [{start}, {end}) of {topic}-{partition} are lost"


def report_data_loss(message: str, *, fail: bool) -> None:
    """Raise (``failOnDataLoss=true``) or log a warning that data was lost."""
    if fail:
        raise DataLossError(
            f"{message}: retention or DeleteRecords removed them, or the topic was deleted, "
            "before the query read them. Set the source option 'failOnDataLoss' to 'false' "
            "to skip lost data with a warning instead of failing."
        )
    log.warning("%s; skipping them (failOnDataLoss=false)", message)


_FAST_READS = frozenset(
    {
        "ssl.ca.location",
        "ssl.ca.pem",
        "ssl.certificate.location",
        "ssl.key.location",
        "ssl.key.password",
        "ssl.endpoint.identification.algorithm",
        "sasl.mechanism",
        "sasl.username",
        "sasl.password",
    }
)
"""The TLS and SASL settings the tasks' own Fetch connections honour (``librdkafka_security``)."""
_LOGINS = frozenset({"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"})
"""SASL mechanisms they log in with as librdkafka does (librdkafka's OAUTHBEARER takes its
token from settings and callbacks strom's client does not read)."""


def fetch_security(client: dict[str, str]) -> ClientSecurity | str:
    """TLS and SASL of the tasks' own Fetch connections, from the librdkafka settings; or, when
    they cannot honour the settings, why (the tasks then consume through librdkafka)."""
    unread = sorted(
        name
        for name, value in client.items()
        if name.startswith(("ssl.", "sasl.")) and name not in _FAST_READS and value
    )
    if unread:
        return f"kafka.{unread[0]} is a setting only librdkafka reads"
    protocol = str(client.get("security.protocol", "PLAINTEXT")).upper()
    mechanism = str(client.get("sasl.mechanism", "PLAIN")).upper()
    if protocol.startswith("SASL") and mechanism not in _LOGINS:
        return f"only librdkafka logs in with SASL {mechanism}"
    try:
        return librdkafka_security(client)
    except (OSError, ValueError) as exc:  # ssl.SSLError is an OSError
        return f"Python's TLS cannot load the certificates or keys ({exc})"


def log_read_path(client: dict[str, str]) -> None:
    """Say in the query's log, in one line, how its tasks read and why."""
    security = fetch_security(client)
    if isinstance(security, str):
        log.info("strom source: tasks consume through librdkafka (the slower path): %s", security)
    else:
        log.info("strom source: tasks read with their own Fetch requests (the fast path)")


def read_range(offsets: OffsetRange, settings: FetchSettings) -> Iterator[Any]:
    """Arrow record batches of the records of ``offsets``, in offset order, each of at most
    ``settings.fetch_records`` rows."""
    security = fetch_security(settings.client)
    consumer = Consumer(consumer_settings(settings.client))
    try:
        if isinstance(security, str):
            yield from _Consume(consumer, offsets, settings).batches()
        else:
            yield from _Fetch(consumer, offsets, settings, security).batches()
    finally:
        consumer.close()


class _Range:
    """The state of one range being read: the next offset, and a consumer that answers the
    partition's leader and log start offset (what both read paths share)."""

    def __init__(self, consumer: Any, offsets: OffsetRange, settings: FetchSettings) -> None:
        self.consumer = consumer
        self.range = offsets
        self.settings = settings
        self.position = offsets.start
        self.tp = KafkaTopicPartition(offsets.topic, offsets.partition)

    def _check_idle(self, idle_since: float) -> None:
        """Fail when no records came for ``pollTimeoutMs``."""
        if time.monotonic() - idle_since > self.settings.poll_timeout_ms / 1000:
            raise TimeoutError(
                f"no records of {self._name()} at offset {self.position} (reading up to "
                f"{self.range.end}) within {self.settings.poll_timeout_ms} ms "
                "(kafkaConsumer.pollTimeoutMs)"
            )

    def _name(self) -> str:
        return f"{self.range.topic}-{self.range.partition}"

    def _log_start(self) -> int:
        try:
            low, _ = self.consumer.get_watermark_offsets(
                self.tp, timeout=self.settings.api_timeout_ms / 1000
            )
        except KafkaException as exc:
            raise RuntimeError(f"cannot get the offsets of {self._name()}: {exc.args[0]}") from None
        return int(low)

    def _skip_lost(self) -> None:
        """Report offsets below the log start offset as lost, and move past them."""
        low = self._log_start()
        if self.position < low:
            lost_to = min(low, self.range.end)
            report_data_loss(
                lost_offsets(self.range.topic, self.range.partition, self.position, lost_to),
                fail=self.settings.fail_on_data_loss,
            )
            self.position = lost_to

    def _on_gone(self) -> None:
        """The fetch offset is out of range: below the log start (lost, skipped to it) or
        past the log end (the partition was truncated or recreated: the rest is gone)."""
        before = self.position
        self._skip_lost()
        if self.position == before:
            report_data_loss(
                lost_offsets(self.range.topic, self.range.partition, before, self.range.end),
                fail=self.settings.fail_on_data_loss,
            )
            self.position = self.range.end


class _Fetch(_Range):
    """The fast path: Fetch requests to the partition's leader, columns from the batch bytes."""

    def __init__(
        self,
        consumer: Any,
        offsets: OffsetRange,
        settings: FetchSettings,
        security: ClientSecurity,
    ) -> None:
        super().__init__(consumer, offsets, settings)
        client = settings.client
        self.read_committed = client.get("isolation.level") == "read_committed"
        self.wait_ms = int(client.get("fetch.wait.max.ms", 500))
        self.partition_bytes = int(
            client.get("max.partition.fetch.bytes", DEFAULT_PARTITION_FETCH_BYTES)
        )
        self.security = security
        self.columns = RecordColumns(
            offsets.topic, offsets.partition, arrow_schema(include_headers=settings.include_headers)
        )

    def batches(self) -> Iterator[Any]:
        self._skip_lost()
        idle_since = time.monotonic()
        connection: BrokerConnection | None = None
        try:
            while self.position < self.range.end:
                if connection is None:
                    connection = self._connect()
                    if connection is None:
                        self._wait(idle_since)
                        continue
                    self._send(connection)
                kept = self._next(connection)
                if kept is None:
                    connection.close()
                    connection = None
                    if self.position < self.range.end:
                        self._wait(idle_since)
                    continue
                if self.position < self.range.end:
                    # In flight while these records are decoded: the broker reads the next
                    # records while this task turns these into columns.
                    self._send(connection)
                batch = self.columns.arrow(kept, self.range.end)
                if batch is not None:
                    idle_since = time.monotonic()
                    size = self.settings.fetch_records
                    for row in range(0, batch.num_rows, size):
                        yield batch.slice(row, size)
                else:
                    self._check_idle(idle_since)
        finally:
            if connection is not None:
                connection.close()

    def _next(self, connection: BrokerConnection) -> Kept | None:
        """The batches of the next answer, the position moved past them; None when the
        connection failed or the answer was an error to retry after a new leader lookup."""
        answer = self._answer(connection)
        if answer is None:
            return None
        if answer.error_code == ErrorCode.offset_out_of_range:
            self._on_gone()
            return None
        if answer.error_code != ErrorCode.none:
            if answer.error_code in _RETRIABLE:
                return None
            raise RuntimeError(
                f"reading {self._name()} at offset {self.position}: {answer.error_code.name}"
            )
        aborted = None
        if self.read_committed:
            aborted = answer.aborted_transactions or ()
        kept = self.columns.keep(answer.records or b"", first=self.position, aborted=aborted)
        stable = answer.last_stable_offset if self.read_committed else answer.high_watermark
        if kept.next_offset == self.position and self.position >= stable:
            self.position = self.range.end  # the rest of the range holds no records
        else:
            self.position = kept.next_offset
        return kept

    def _send(self, connection: BrokerConnection) -> None:
        """Ask for the records from the position on; the answer's records are read as a view
        of the connection's buffer (no copy), used up before the next ``receive``."""
        connection.send(self._request(self.position), reader=fetch_answer.read)

    def _request(self, offset: int) -> FetchRequest:
        return FetchRequest(
            max_wait=i32Timedelta.parse(datetime.timedelta(milliseconds=self.wait_ms)),
            min_bytes=i32(1),
            max_bytes=i32(max(self.partition_bytes, 1)),
            isolation_level=i8(1 if self.read_committed else 0),
            topics=(
                FetchTopic(
                    topic=TopicName(self.range.topic),
                    partitions=(
                        FetchPartition(
                            partition=i32(self.range.partition),
                            fetch_offset=i64(offset),
                            partition_max_bytes=i32(self.partition_bytes),
                        ),
                    ),
                ),
            ),
            forgotten_topics_data=(),
        )

    def _answer(self, connection: BrokerConnection) -> fetch_answer.FetchedPartition | None:
        """The partition's part of the next Fetch answer; None when the connection failed."""
        try:
            response: fetch_answer.FetchAnswer = connection.receive()
        except OSError as exc:
            log.info("strom source: fetching %s: %s; retrying", self._name(), exc)
            return None
        if response.error_code != ErrorCode.none:
            raise RuntimeError(f"fetching {self._name()}: {response.error_code.name}")
        for topic in response.responses:
            for partition in topic.partitions:
                if partition.partition_index == self.range.partition:
                    return partition
        raise RuntimeError(f"the fetch answer has no {self._name()}")

    def _connect(self) -> BrokerConnection | None:
        """A connection to the partition's leader; None while it has none."""
        timeout = self.settings.api_timeout_ms / 1000
        try:
            metadata = self.consumer.list_topics(self.range.topic, timeout=timeout)
            partition = metadata.topics[self.range.topic].partitions.get(self.range.partition)
            broker = None if partition is None else metadata.brokers.get(partition.leader)
            if broker is None:
                return None
            return BrokerConnection(
                broker.host,
                broker.port,
                timeout=timeout + self.wait_ms / 1000,
                client_id=str(self.settings.client.get("client.id", "strom-spark")),
                security=self.security,
            )
        except (KafkaException, OSError) as exc:
            log.info("strom source: no connection to the leader of %s: %s", self._name(), exc)
            return None

    def _wait(self, idle_since: float) -> None:
        """Back off before another try; past ``pollTimeoutMs`` without records, fail."""
        self._check_idle(idle_since)
        time.sleep(_RETRY_S)


class _Consume(_Range):
    """The path for settings only librdkafka honours: ``consume()`` from an assigned offset,
    each call's records one Arrow record batch (``RecordBatchBuilder``).

    The cyclic garbage collector is off while the range is read: each ``consume()`` makes
    thousands of ``Message`` objects (which the collector tracks, though they never form
    cycles), and the collections they trigger took ~40% of a task's time.
    """

    def batches(self) -> Iterator[Any]:
        self._skip_lost()
        if self.position >= self.range.end:
            return
        builder = RecordBatchBuilder(include_headers=self.settings.include_headers)
        collecting = gc.isenabled()
        gc.disable()
        try:
            self._assign()
            idle_since = time.monotonic()
            done = False
            while not done and self.position < self.range.end:
                wanted = min(self.settings.fetch_records, self.range.end - self.position)
                kept, done = self._keep(self.consumer.consume(wanted, _POLL_S))
                if kept:
                    idle_since = time.monotonic()
                    yield builder.build(self.range.topic, self.range.partition, kept)
                else:
                    self._check_idle(idle_since)
        finally:
            if collecting:
                gc.enable()

    def _keep(self, messages: list[Any]) -> tuple[list[Any], bool]:
        """The consumed records inside the range, and whether the range is done.

        The common case, records only and all inside the range, is decided by two C-level
        checks; error events or the range's end among them go record by record.
        """
        if (
            messages
            and not any(map(Message.error, messages))
            and messages[-1].offset() < self.range.end
        ):
            self.position = messages[-1].offset() + 1
            return messages, False
        kept: list[Any] = []
        for message in messages:
            error = message.error()
            if error is not None:
                if self._on_error(error):
                    return kept, True
                if self.position >= self.range.end:
                    break
                continue
            if message.offset() >= self.range.end:
                return kept, True
            kept.append(message)
            self.position = message.offset() + 1
        return kept, False

    def _assign(self) -> None:
        self.consumer.assign(
            [KafkaTopicPartition(self.range.topic, self.range.partition, self.position)]
        )

    def _on_error(self, error: Any) -> bool:
        """Handle an error event; True when the range is done."""
        code = error.code()
        if code == KafkaError._PARTITION_EOF:
            return True  # the rest of the range holds no records (markers, compacted away)
        if code in _GONE:
            self._on_gone()
            if self.position < self.range.end:
                self._assign()
            return self.position >= self.range.end
        raise RuntimeError(f"reading {self._name()} at offset {self.position}: {error.str()}")
