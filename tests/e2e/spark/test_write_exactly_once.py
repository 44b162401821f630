"""Exactly-once streaming writes (``exactlyOnce=true``): a copy query whose driver is SIGKILLed in
the middle of a micro-batch and restarted from its checkpoint, and a micro-batch replayed after its
transactions were committed, leave every input record exactly once in the output as a
read_committed consumer sees it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import IsolationLevel
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import _listoffsets
from pyspark.errors import StreamingQueryException
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery
from strom_harness import StromServer
from wire_recorder import Exchange, WireRecorder, recorded_server

from e2e.spark.clients import SERVER_OVERRIDES, Record, admin, consume_all, create_topic, produce
from e2e.spark.exactly_once_copy import start_copy
from strom.protocol.api import ApiKey

DRIVER = Path(__file__).with_name("exactly_once_copy.py")
PARTITIONS = 2
_KAFKA_SPEC: Any = _listoffsets.OffsetSpec  # its methods are untyped
_LATEST = _KAFKA_SPEC.latest()


def _fill(bootstrap: str, topic: str, per_partition: int) -> Counter[tuple[bytes, bytes]]:
    """Distinct keyed records in each partition; what the output must hold once each."""
    records = [
        Record(b"v%d-%d" % (p, i), key=b"k%d-%d" % (p, i), partition=p)
        for p in range(PARTITIONS)
        for i in range(per_partition)
    ]
    produce(bootstrap, topic, records)
    return Counter((r.key or b"", r.value or b"") for r in records)


def _output(bootstrap: str, topic: str, isolation: str) -> Counter[tuple[bytes, bytes]]:
    records = consume_all(bootstrap, topic, PARTITIONS, isolation=isolation)
    return Counter((r.key or b"", r.value or b"") for r in records)


def _open_transaction(client: Any, topic: str) -> bool:
    """Whether records sit in an open transaction: the high watermark passes the stable offset."""
    ends = {}
    for level in (IsolationLevel.READ_UNCOMMITTED, IsolationLevel.READ_COMMITTED):
        request = {KafkaTopicPartition(topic, p): _LATEST for p in range(PARTITIONS)}
        futures = client.list_offsets(request, isolation_level=level, request_timeout=5)
        ends[level] = [futures[tp].result(5).offset for tp in sorted(futures, key=str)]
    uncommitted = ends[IsolationLevel.READ_UNCOMMITTED]
    committed = ends[IsolationLevel.READ_COMMITTED]
    return any(u > c for u, c in zip(uncommitted, committed, strict=True))


def _committed_batches(checkpoint: Path) -> int:
    commits = checkpoint / "commits"
    return sum(1 for f in commits.iterdir() if f.name.isdigit()) if commits.exists() else 0


def _kill_mid_batch(
    child: subprocess.Popen[bytes], log: Path, *, bootstrap: str, checkpoint: Path, target: str
) -> None:
    """SIGKILL the driver (JVM and Python workers too) once a micro-batch was committed and the
    next one holds records in open transactions."""
    deadline = time.monotonic() + 90
    client = admin(bootstrap)
    try:
        while not (_committed_batches(checkpoint) >= 1 and _open_transaction(client, target)):
            assert child.poll() is None, "the driver ended early:\n" + log.read_text()[-3000:]
            assert time.monotonic() < deadline, "no micro-batch in flight within 90s"
            time.sleep(0.02)
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()


@pytest.mark.timeout(240)  # two drivers, one a JVM of its own: slow on a loaded machine
def test_driver_killed_mid_batch_and_restarted_copies_each_record_once(
    spark: SparkSession, broker: StromServer, tmp_path: Path
) -> None:
    bootstrap = broker.bootstrap
    source = create_topic(bootstrap, "eo-in", partitions=PARTITIONS)
    target = create_topic(bootstrap, "eo-out", partitions=PARTITIONS)
    expected = _fill(bootstrap, source, 40)  # two micro-batches
    checkpoint = tmp_path / "cp"
    log = tmp_path / "driver.log"
    with log.open("wb") as out:
        child = subprocess.Popen(
            [sys.executable, str(DRIVER), bootstrap, source, target, str(checkpoint)],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: the JVM and workers die with it
        )
        _kill_mid_batch(child, log, bootstrap=bootstrap, checkpoint=checkpoint, target=target)
    assert sum(_output(bootstrap, target, "read_committed").values()) < sum(expected.values())

    query = start_copy(
        spark, bootstrap=bootstrap, source=source, target=target, checkpoint=checkpoint
    )
    assert query.awaitTermination(120)
    assert _output(bootstrap, target, "read_committed") == expected


def test_a_replayed_micro_batch_that_was_committed_writes_nothing(
    spark: SparkSession, broker: StromServer, tmp_path: Path
) -> None:
    bootstrap = broker.bootstrap
    source = create_topic(bootstrap, "eo-replay-in", partitions=PARTITIONS)
    target = create_topic(bootstrap, "eo-replay-out", partitions=PARTITIONS)
    expected = _fill(bootstrap, source, 20)
    checkpoint = tmp_path / "cp"

    def run_to_the_end() -> StreamingQuery:
        query = start_copy(
            spark,
            bootstrap=bootstrap,
            source=source,
            target=target,
            checkpoint=checkpoint,
            slow=False,
            rows_per_trigger=1000,
        )
        assert query.awaitTermination(120)
        return query

    run_to_the_end()
    assert _output(bootstrap, target, "read_committed") == expected

    # The driver committed batch 0's transactions but "crashed" before Spark's commit log
    # recorded it: the restarted query runs batch 0 again.
    for name in ("0", ".0.crc"):
        (checkpoint / "commits" / name).unlink(missing_ok=True)
    query = run_to_the_end()
    replayed = [p for p in query.recentProgress if p.batchId == 0]
    assert replayed and replayed[0].numInputRows == sum(expected.values())
    # Not even an aborted second copy: the replayed tasks found their batch marker.
    assert _output(bootstrap, target, "read_uncommitted") == expected


def test_a_failed_micro_batch_leaves_no_transaction_open(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The task of input partition 1 fails once the task of partition 0 has written its rows in
    a transaction and handed it over (its DescribeTransactions was answered): the driver aborts
    that transaction."""
    with recorded_server(tmp_path / "data", overrides=SERVER_OVERRIDES) as (broker, recorder):
        bootstrap = broker.bootstrap
        source = create_topic(bootstrap, "eo-fail-in", partitions=PARTITIONS)
        target = create_topic(bootstrap, "eo-fail-out", partitions=PARTITIONS)
        _fill(bootstrap, source, 10)
        handed_over = tmp_path / "partition-0-handed-over"
        _touch_when_described(recorder, b"eo-fail-0", handed_over)
        failing = F.udf(_fail_once(str(handed_over)), "binary", useArrow=False)
        query = (
            spark.readStream.format("strom")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("subscribe", source)
            .option("startingOffsets", "earliest")
            .load()
            .select("key", failing(F.col("value")).alias("value"), "partition")
            .writeStream.format("strom")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("topic", target)
            .option("exactlyOnce", "true")
            .option("transactionalIdPrefix", "eo-fail")
            .option("checkpointLocation", str(tmp_path / "cp"))
            .trigger(availableNow=True)
            .start()
        )
        with pytest.raises(StreamingQueryException, match="boom"):
            query.awaitTermination(120)
        assert sum(_output(bootstrap, target, "read_uncommitted").values()) == 10
        assert not _open_transaction(admin(bootstrap), target)
        assert not _output(bootstrap, target, "read_committed")


def _touch_when_described(recorder: WireRecorder, transactional_id: bytes, flag: Path) -> None:
    """Create ``flag`` once a DescribeTransactions of ``transactional_id`` was answered: the last
    thing a task does before handing its open transaction to the driver."""

    def described(exchanges: list[Exchange]) -> bool:
        return any(
            e.api_key == ApiKey.DESCRIBE_TRANSACTIONS
            and e.response is not None
            and transactional_id in e.request
            for e in exchanges
        )

    def watch() -> None:
        recorder.wait_for(described, "partition 0's task describes its transaction", timeout=120)
        flag.touch()

    threading.Thread(target=watch, daemon=True).start()


def _fail_once(flag: str) -> Callable[[bytes], bytes]:
    """A UDF failing on partition 1's first record once ``flag`` exists (it runs in a Python
    worker, where only installed packages import, so it takes plain values)."""

    def fail_after_partition_0_handed_over(value: bytes) -> bytes:
        if value != b"v1-0":
            return value
        deadline = time.monotonic() + 60
        while not os.path.exists(flag):
            assert time.monotonic() < deadline, "partition 0's task never handed over"
            time.sleep(0.05)
        raise RuntimeError("boom")

    return fail_after_partition_0_handed_over
