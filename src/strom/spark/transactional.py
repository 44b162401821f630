"""Exactly-once streaming writes: one Kafka transaction per task, committed by the driver.

A two-phase commit, as Flink's KafkaSink does it. Each task of micro-batch ``b`` writes its rows
in a transaction whose id is ``<prefix>-<Spark partition id>`` (the prefix defaults to
``spark-strom-<query id>``, stable across restarts from a checkpoint), puts a batch marker in the
same transaction (offset ``b + 1`` committed to the consumer group named like the transactional
id, with the query id as the offset's metadata), flushes, and leaves the transaction open: its
commit message carries the transactional id, producer id and epoch. The driver commits every
task's transaction (EndTxn) in ``commit``, once Spark has all of them, and aborts them in
``abort``.

Replays. ``init_transactions`` with the same id fences an earlier attempt and aborts its open
transaction, so a task that failed, or a micro-batch whose driver died before committing, leaves
nothing visible to read_committed consumers. A micro-batch whose transactions the driver
committed but that Spark had not yet recorded as committed is run again after a restart: its
tasks find their marker at ``b + 1`` and write nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaException, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient
from pyspark import TaskContext

from strom.client.security import librdkafka_security
from strom.client.transactions import TransactionClient
from strom.common import KafkaError
from strom.spark.options import WriteOptions

__all__ = [
    "OpenTransaction",
    "TaskIdentity",
    "TaskTransaction",
    "TransactionError",
    "abort_batch",
    "commit_batch",
    "committed_batch",
    "task_identity",
    "transactional_id",
]

log = logging.getLogger(__name__)

QUERY_ID = "sql.streaming.queryId"
BATCH_ID = "streaming.sql.batchId"
MARKER_PARTITION = 0


class TransactionError(RuntimeError):
    """A transaction of an exactly-once write could not be opened, prepared or committed."""


@dataclass(frozen=True)
class TaskIdentity:
    """Which streaming query, micro-batch and Spark partition a write task belongs to."""

    query_id: str
    batch_id: int
    partition_id: int


@dataclass(frozen=True)
class OpenTransaction:
    """A task's prepared transaction, for the driver to commit or abort."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    batch_id: int


def task_identity() -> TaskIdentity:
    """The running task's identity, from the local properties Spark's micro-batches set."""
    context = TaskContext.get()
    query_id = context.getLocalProperty(QUERY_ID) if context is not None else None
    batch_id = context.getLocalProperty(BATCH_ID) if context is not None else None
    if context is None or query_id is None or batch_id is None:
        raise TransactionError(
            "exactlyOnce needs a streaming query's micro-batch (no query id in the task "
            "context): use it with writeStream, or with strom.spark.write_stream"
        )
    return TaskIdentity(query_id, int(batch_id), context.partitionId())


def transactional_id(prefix: str | None, task: TaskIdentity) -> str:
    """``<prefix>-<partition>``; the prefix defaults to ``spark-strom-<query id>``."""
    return f"{prefix or 'spark-strom-' + task.query_id}-{task.partition_id}"


def _connection_settings(client: Mapping[str, str]) -> dict[str, Any]:
    """The settings a helper consumer or admin client needs: where the cluster is, and how to
    connect to it securely."""
    return {
        k: v
        for k, v in client.items()
        if k in ("bootstrap.servers", "client.id") or k.startswith(("security.", "ssl.", "sasl."))
    }


def committed_batch(
    client: Mapping[str, str], *, group: str, query_id: str, timeout_ms: int
) -> int:
    """The last micro-batch of ``query_id`` whose marker ``group`` holds, or -1."""
    admin = AdminClient(_connection_settings(client))
    request = ConsumerGroupTopicPartitions(group)
    futures = admin.list_consumer_group_offsets(
        [request], require_stable=True, request_timeout=timeout_ms / 1000
    )
    try:
        offsets = futures[group].result(timeout_ms / 1000)
    except KafkaException as exc:
        raise TransactionError(
            f"cannot read the batch marker of {group!r}: {exc.args[0]}"
        ) from None
    batches = [
        tp.offset - 1
        for tp in offsets.topic_partitions or ()
        if tp.metadata == query_id and tp.offset > 0
    ]
    return max(batches, default=-1)


class TaskTransaction:
    """The transaction of one task: ``begin``, write with its producer, then ``prepare``."""

    def __init__(self, options: WriteOptions, task: TaskIdentity) -> None:
        self.options = options
        self.task = task
        self.id = transactional_id(options.transactional_id_prefix, task)
        self._timeout = options.api_timeout_ms / 1000

    def begin(self) -> Any:
        """A producer in an open transaction, or None when this micro-batch was committed."""
        producer = Producer({**self.options.client, "transactional.id": self.id})
        try:
            producer.init_transactions(self._timeout)  # fences and aborts earlier attempts
            done = committed_batch(
                self.options.client,
                group=self.id,
                query_id=self.task.query_id,
                timeout_ms=self.options.api_timeout_ms,
            )
            if done >= self.task.batch_id:
                log.info("%s: micro-batch %d already committed", self.id, self.task.batch_id)
                return None
            producer.begin_transaction()
        except KafkaException as exc:
            raise TransactionError(f"cannot begin transaction {self.id!r}: {exc.args[0]}") from None
        return producer

    def prepare(self, producer: Any, marker_topic: str) -> OpenTransaction:
        """Add the batch marker to the (flushed) transaction and hand it over, still open."""
        marker = KafkaTopicPartition(
            marker_topic, MARKER_PARTITION, self.task.batch_id + 1, metadata=self.task.query_id
        )
        consumer = Consumer({**_connection_settings(self.options.client), "group.id": self.id})
        try:
            producer.send_offsets_to_transaction(
                [marker], consumer.consumer_group_metadata(), self._timeout
            )
        except KafkaException as exc:
            raise TransactionError(
                f"cannot add the batch marker to {self.id!r}: {exc.args[0]}"
            ) from None
        finally:
            consumer.close()
        client = TransactionClient(
            self.options.client["bootstrap.servers"],
            timeout_ms=self.options.api_timeout_ms,
            security=librdkafka_security(self.options.client),
        )
        try:
            state = client.describe(self.id)
        except (KafkaError, OSError) as exc:
            raise TransactionError(f"cannot describe transaction {self.id!r}: {exc}") from None
        finally:
            client.close()
        if state.state != "Ongoing":
            raise TransactionError(f"transaction {self.id!r} is {state.state}, not Ongoing")
        return OpenTransaction(self.id, state.producer_id, state.producer_epoch, self.task.batch_id)

    def abort(self, producer: Any) -> None:
        """Abort after a failed write; best effort (a later attempt or the timeout aborts too)."""
        try:
            producer.abort_transaction(self._timeout)
        except KafkaException as exc:
            log.warning("cannot abort transaction %r: %s", self.id, exc.args[0])


def _end_all(
    options: WriteOptions, transactions: Sequence[OpenTransaction], *, commit: bool
) -> list[str]:
    """End each transaction; the failures, one line each."""
    failures: list[str] = []
    if not transactions:
        return failures
    client = TransactionClient(
        options.client["bootstrap.servers"],
        timeout_ms=options.api_timeout_ms,
        security=librdkafka_security(options.client),
    )
    try:
        for txn in transactions:
            try:
                client.end(
                    txn.transactional_id,
                    producer_id=txn.producer_id,
                    producer_epoch=txn.producer_epoch,
                    commit=commit,
                )
            except (KafkaError, OSError) as exc:
                failures.append(f"{txn.transactional_id}: {exc}")
    finally:
        client.close()
    return failures


def commit_batch(
    options: WriteOptions, transactions: Sequence[OpenTransaction], batch_id: int
) -> None:
    """Commit every task's transaction of a micro-batch, on the driver."""
    failures = _end_all(options, transactions, commit=True)
    if failures:
        raise TransactionError(
            f"cannot commit micro-batch {batch_id}: " + "; ".join(failures) + ". A transaction "
            "aborted by the broker outlived kafka.transaction.timeout.ms; restart the query "
            "from its checkpoint to write the batch again (committed parts are not rewritten)"
        )


def abort_batch(
    options: WriteOptions,
    transactions: Sequence[OpenTransaction],
    batch_id: int | None,
    *,
    unreported: Sequence[int] = (),
) -> None:
    """Abort the transactions of a failed micro-batch; failures are logged.

    Spark hands the driver only the commit messages that reached it before the failure: a
    task that had prepared its transaction but whose message came too late is among
    ``unreported`` (Spark partition ids). Its transactional id is fenced (InitProducerId),
    which aborts what it left open, when the prefix is known: set with
    ``transactionalIdPrefix``, or seen in a reported transaction's id.
    """
    batch = "a micro-batch" if batch_id is None else f"micro-batch {batch_id}"
    for failure in _end_all(options, transactions, commit=False):
        log.warning("%s: cannot abort %s", batch, failure)
    if not unreported:
        return
    prefix = options.transactional_id_prefix or _prefix_of(transactions)
    if prefix is None:
        log.warning(
            "%s: %d task(s) did not report; a transaction one left open is aborted when the "
            "query restarts or after kafka.transaction.timeout.ms (set transactionalIdPrefix "
            "to let the driver abort it at once)",
            batch,
            len(unreported),
        )
        return
    for partition in unreported:
        _fence(options, f"{prefix}-{partition}", batch)


def _prefix_of(transactions: Sequence[OpenTransaction]) -> str | None:
    """The prefix of ``<prefix>-<partition>`` transactional ids."""
    if not transactions:
        return None
    return transactions[0].transactional_id.rsplit("-", 1)[0]


def _fence(options: WriteOptions, transactional_id: str, batch: str) -> None:
    """Abort whatever ``transactional_id`` has open by taking over the id (InitProducerId)."""
    producer = Producer(
        {**_connection_settings(options.client), "transactional.id": transactional_id}
    )
    try:
        producer.init_transactions(options.api_timeout_ms / 1000)
    except KafkaException as exc:
        log.warning("%s: cannot fence %r: %s", batch, transactional_id, exc.args[0])
