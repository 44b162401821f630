"""The sink: batch (``df.write``) and streaming (``writeStream``) writes of a DataFrame to topics.

As Spark's Kafka sink: columns ``value`` (required, string or binary), ``key`` (string or
binary), ``topic`` (string; the ``topic`` option wins over it), ``partition`` (int) and
``headers`` (array<struct<key string, value binary>>); with ``includeTimestamp`` also
``timestamp`` (long, epoch milliseconds: the records' CreateTime); other columns are ignored.
Types are checked before any task runs, naming the bad column. Each task writes its Arrow
batches with one idempotent confluent-kafka Producer and flushes it at the end, failing on the
first delivery error; a batch with one topic and no partitions, headers or timestamps goes to
librdkafka in ``produce_batch`` calls, others record by record (confluent-kafka 2.16's
``produce_batch`` refuses per-message timestamps and ignores per-message partitions, whatever
its docstring says; ``test_partitions_of_a_batch_without_headers`` holds the sink to them).
At least once, like Spark's sink; with ``exactlyOnce`` a streaming write's tasks write in
transactions the driver commits with the micro-batch (``strom.spark.transactional``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import chain
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    LongType,
    NullType,
    StringType,
    StructType,
)

from strom.spark.options import OptionError, WriteOptions
from strom.spark.transactional import (
    OpenTransaction,
    TaskTransaction,
    abort_batch,
    commit_batch,
    task_identity,
)

__all__ = [
    "StromBatchWriter",
    "StromStreamWriter",
    "WriteError",
    "Written",
    "check_producer_settings",
    "check_write_schema",
]


class WriteError(RuntimeError):
    """Records could not be written (delivery failed, or a row had no topic)."""


@dataclass
class Written(WriterCommitMessage):
    """What one task wrote, and with ``exactlyOnce`` the transaction it left open."""

    records: int
    transaction: OpenTransaction | None = None


_TEXT_OR_BYTES = (StringType, BinaryType, NullType)


def _is_headers(data_type: DataType) -> bool:
    if not isinstance(data_type, ArrayType) or not isinstance(data_type.elementType, StructType):
        return False
    fields = {f.name: f.dataType for f in data_type.elementType.fields}
    return (
        set(fields) == {"key", "value"}
        and isinstance(fields["key"], StringType)
        and isinstance(fields["value"], (BinaryType, NullType))
    )


def check_write_schema(schema: StructType, options: WriteOptions) -> None:
    """Refuse a DataFrame the sink cannot write, naming the column, before any task runs."""
    types = {f.name.lower(): f.dataType for f in schema.fields}
    if options.topic is None:
        if "topic" not in types:
            raise OptionError(
                "topic option required when no 'topic' attribute is present; use the 'topic' "
                "option to set a topic"
            )
        if not isinstance(types["topic"], StringType):
            raise OptionError(f"'topic' attribute type must be a string, not {types['topic']}")
    if "value" not in types:
        raise OptionError("required attribute 'value' not found")
    for name in ("key", "value"):
        if name in types and not isinstance(types[name], _TEXT_OR_BYTES):
            raise OptionError(
                f"'{name}' attribute type must be a string or binary, not {types[name]}"
            )
    if "partition" in types and not isinstance(types["partition"], (IntegerType, NullType)):
        raise OptionError(f"'partition' attribute type must be an int, not {types['partition']}")
    if options.include_timestamp and not isinstance(types.get("timestamp"), (LongType, NullType)):
        raise OptionError(
            "includeTimestamp needs a 'timestamp' attribute of type long (epoch milliseconds)"
        )
    if "headers" in types and not _is_headers(types["headers"]):
        raise OptionError(
            "'headers' attribute type must be array<struct<key:string,value:binary>>, "
            f"not {types['headers'].simpleString()}"
        )


def check_producer_settings(options: WriteOptions) -> None:
    """Refuse settings librdkafka refuses, on the driver, before any task runs."""
    try:
        Producer(options.client)
    except KafkaException as exc:
        raise OptionError(f"bad kafka.* option: {exc.args[0].str()}") from None


class _TaskWriter:
    """Writes one task's Arrow batches with one producer, flushed at the end."""

    def __init__(self, options: WriteOptions, producer: Any = None) -> None:
        self.options = options
        self.failures: list[str] = []
        self.producer = Producer(options.client) if producer is None else producer
        self.first_topic: str | None = None

    def _on_delivery(self, error: Any, message: Any) -> None:
        if error is not None and len(self.failures) < 5:
            self.failures.append(f"{message.topic()}-{message.partition()}: {error.str()}")

    def write(self, batches: Iterable[Any]) -> Written:
        count = 0
        for batch in batches:
            count += self._write_batch(batch)
        remaining = self.producer.flush(self.options.api_timeout_ms / 1000)
        if self.failures:
            raise WriteError("cannot write records: " + "; ".join(self.failures))
        if remaining:
            raise WriteError(
                f"{remaining} records not delivered within {self.options.api_timeout_ms} ms "
                "(kafka.default.api.timeout.ms)"
            )
        return Written(count)

    def _column(self, batch: Any, name: str) -> list[Any] | None:
        names = [n.lower() for n in batch.schema.names]
        if name not in names:
            return None
        return list(batch.column(names.index(name)).to_pylist())

    def _write_batch(self, batch: Any) -> int:
        topic = self._one_topic(batch)
        if topic is not None and self._plain(batch):
            return self._write_plain(batch, topic)
        rows = batch.num_rows
        values = self._column(batch, "value") or [None] * rows
        keys = self._column(batch, "key") or [None] * rows
        partitions = self._column(batch, "partition") or [None] * rows
        headers = self._column(batch, "headers") or [None] * rows
        timestamps = (
            self._column(batch, "timestamp") if self.options.include_timestamp else None
        ) or [None] * rows
        topics = (
            [self.options.topic] * rows
            if self.options.topic is not None
            else self._column(batch, "topic") or []
        )
        produce = self.producer.produce
        for i in range(rows):
            topic = topics[i]
            if topic is None:
                raise WriteError(
                    "null topic present in the data; use the 'topic' option to set a default topic"
                )
            if self.first_topic is None:
                self.first_topic = topic
            extra: dict[str, Any] = {}
            if partitions[i] is not None:
                extra["partition"] = partitions[i]
            if headers[i]:
                extra["headers"] = [(h["key"], h["value"]) for h in headers[i]]
            if timestamps[i] is not None:
                extra["timestamp"] = timestamps[i]
            while True:
                try:
                    produce(
                        topic, value=values[i], key=keys[i], on_delivery=self._on_delivery, **extra
                    )
                    break
                except BufferError:
                    self.producer.poll(0.1)  # the local queue is full: let deliveries drain
                except KafkaException as exc:
                    raise WriteError(f"cannot write to {topic!r}: {exc.args[0]}") from None
            if self.failures:
                raise WriteError("cannot write records: " + "; ".join(self.failures))
        self.producer.poll(0)
        return int(rows)

    def _one_topic(self, batch: Any) -> str | None:
        """The topic of every row of ``batch`` when it has one topic, else None."""
        if self.options.topic is not None:
            return self.options.topic
        column = self._arrow(batch, "topic")
        if column is None or column.null_count:
            return None
        topics = column.unique()
        return str(topics[0].as_py()) if len(topics) == 1 else None

    def _plain(self, batch: Any) -> bool:
        """Whether ``batch`` has no headers, partitions or timestamps to write."""
        named = ["headers", "partition"] + (["timestamp"] if self.options.include_timestamp else [])
        columns = [self._arrow(batch, name) for name in named]
        return all(c is None or c.null_count == len(c) for c in columns)

    def _arrow(self, batch: Any, name: str) -> Any:
        names = [n.lower() for n in batch.schema.names]
        return batch.column(names.index(name)) if name in names else None

    def _write_plain(self, batch: Any, topic: str) -> int:
        """Hand the whole batch to librdkafka in ``produce_batch`` calls (no per-record
        ``produce``), again with the records its full queue refused."""
        if self.first_topic is None:
            self.first_topic = topic
        rows = int(batch.num_rows)
        values = self._column(batch, "value") or [None] * rows
        keys = self._column(batch, "key") or [None] * rows
        messages = [{"key": k, "value": v} for k, v in zip(keys, values, strict=True)]
        while messages:
            try:
                queued = self.producer.produce_batch(topic, messages, on_delivery=self._on_delivery)
            except KafkaException as exc:
                raise WriteError(f"cannot write to {topic!r}: {exc.args[0]}") from None
            refused = [m for m in messages if "_error" in m] if queued < len(messages) else []
            for message in refused:
                error = message.pop("_error")
                if error.code() != KafkaError._QUEUE_FULL:
                    raise WriteError(f"cannot write to {topic!r}: {error.str()}")
            if self.failures:
                raise WriteError("cannot write records: " + "; ".join(self.failures))
            messages = refused
            if messages:
                self.producer.poll(0.1)  # the local queue is full: let deliveries drain
        self.producer.poll(0)
        return rows


def _write_exactly_once(options: WriteOptions, batches: Iterator[Any]) -> Written:
    """A task's rows in a transaction left open for the driver (none when the task has none)."""
    first = next((batch for batch in batches if batch.num_rows), None)
    if first is None:
        return Written(0)
    transaction = TaskTransaction(options, task_identity())
    producer = transaction.begin()
    if producer is None:  # a replay of a micro-batch the driver committed
        return Written(0)
    writer = _TaskWriter(options, producer)
    try:
        written = writer.write(chain([first], batches))
        assert writer.first_topic is not None  # the first batch has rows
        return Written(written.records, transaction.prepare(producer, writer.first_topic))
    except BaseException:
        transaction.abort(producer)
        raise


class StromBatchWriter(DataSourceArrowWriter):
    """``df.write.format("strom")``: append only, as Spark's Kafka sink. With ``exactlyOnce``
    (only inside a streaming micro-batch, as ``foreachBatch`` runs it) the tasks leave their
    transactions open and ``commit`` ends them, as the streaming sink does."""

    def __init__(self, options: WriteOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        if self.options.exactly_once:
            return _write_exactly_once(self.options, iterator)
        return _TaskWriter(self.options).write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        transactions = _transactions(messages)
        if transactions:
            commit_batch(self.options, transactions, transactions[0].batch_id)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        if self.options.exactly_once:
            transactions = _transactions(messages)
            batch_id = transactions[0].batch_id if transactions else None
            abort_batch(self.options, transactions, batch_id, unreported=_unreported(messages))


class StromStreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream.format("strom")``: each micro-batch's tasks write and flush; with
    ``exactlyOnce`` they leave their transactions open and ``commit`` ends them."""

    def __init__(self, options: WriteOptions) -> None:
        self.options = options

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        if self.options.exactly_once:
            return _write_exactly_once(self.options, iterator)
        return _TaskWriter(self.options).write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Commit the tasks' transactions (at least once: nothing to do, all was flushed)."""
        commit_batch(self.options, _transactions(messages), batchId)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Abort the tasks' transactions (at least once: records written stay written)."""
        if self.options.exactly_once:
            abort_batch(
                self.options, _transactions(messages), batchId, unreported=_unreported(messages)
            )


def _unreported(messages: list[WriterCommitMessage | None]) -> list[int]:
    """The Spark partitions whose commit message did not reach the driver."""
    return [partition for partition, message in enumerate(messages) if message is None]


def _transactions(messages: list[WriterCommitMessage | None]) -> list[OpenTransaction]:
    return [m.transaction for m in messages if isinstance(m, Written) and m.transaction]
