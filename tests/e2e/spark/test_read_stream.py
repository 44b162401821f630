"""Streaming reads (``spark.readStream.format("strom")``): admission control, AvailableNow,
restarts from a checkpoint, new partitions and topics, and data loss between micro-batches."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.cimpl import NewPartitions
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.datasource import ReadAllAvailable
from pyspark.sql.streaming.query import StreamingQuery
from strom_harness import StromServer

from e2e.spark.clients import Record, admin, create_topic, produce, produce_values, unique_topic
from strom.spark.options import parse_read_options
from strom.spark.reader import RangePartition, StromStreamReader


def stream(spark: SparkSession, broker: StromServer, **options: str) -> DataFrame:
    return (
        spark.readStream.format("strom")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("startingOffsets", "earliest")
        .options(**options)
        .load()
    )


class Collected:
    """A ``foreachBatch`` sink that keeps every micro-batch's (partition, offset) pairs."""

    def __init__(self) -> None:
        self.batches: list[list[tuple[int, int]]] = []
        self.lock = threading.Lock()

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        rows = sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())
        with self.lock:
            self.batches.append(rows)

    @property
    def offsets(self) -> list[tuple[int, int]]:
        with self.lock:
            return sorted(o for batch in self.batches for o in batch)

    def sizes(self) -> list[int]:
        with self.lock:
            return [len(b) for b in self.batches if b]


def run(df: DataFrame, sink: Collected, checkpoint: Path, **trigger: Any) -> StreamingQuery:
    writer = df.writeStream.foreachBatch(sink).option("checkpointLocation", str(checkpoint))
    return writer.trigger(**trigger).start()


def test_max_offsets_per_trigger_with_available_now(
    spark: SparkSession, broker: StromServer, tmp_path: Path
) -> None:
    topic = create_topic(broker.bootstrap, "stream-max", partitions=2)
    produce_values(broker.bootstrap, topic, 20, partition=0)
    produce_values(broker.bootstrap, topic, 10, partition=1)
    sink = Collected()
    query = run(
        stream(spark, broker, subscribe=topic, maxOffsetsPerTrigger="10"),
        sink,
        tmp_path / "cp",
        availableNow=True,
    )
    assert query.awaitTermination(120)
    assert sink.offsets == [(0, o) for o in range(20)] + [(1, o) for o in range(10)]
    # Spark's rate limit: the budget shared in proportion to lag, shares rounded down.
    assert sink.sizes() == [9, 9, 9, 3]
    progress = query.recentProgress[0]["sources"][0]
    assert json.loads(progress["endOffset"]) == {topic: {"0": 6, "1": 3}}


def test_starting_offsets_apply_to_a_new_query_only(
    spark: SparkSession, broker: StromServer, tmp_path: Path
) -> None:
    topic = create_topic(broker.bootstrap, "stream-start", partitions=3)
    for partition in range(3):
        produce_values(broker.bootstrap, topic, 5, partition=partition)
    sink = Collected()
    start = json.dumps({topic: {"0": 3, "1": -1, "2": -2}})
    df = stream(spark, broker, subscribe=topic, startingOffsets=start, maxOffsetsPerTrigger="4")
    query = run(df, sink, tmp_path / "cp", availableNow=True)
    assert query.awaitTermination(120)
    assert sink.offsets == [(0, 3), (0, 4)] + [(2, o) for o in range(5)]
    produce_values(broker.bootstrap, topic, 2, partition=1, start=5)
    # The checkpoint wins over startingOffsets: partition 1 goes on from where it was (5).
    query = run(df, sink, tmp_path / "cp", availableNow=True)
    assert query.awaitTermination(120)
    assert sink.offsets == [(0, 3), (0, 4), (1, 5), (1, 6)] + [(2, o) for o in range(5)]
    latest = Collected()
    query = run(
        stream(spark, broker, subscribe=topic, startingOffsets="latest"),
        latest,
        tmp_path / "cp-latest",
        processingTime="100 milliseconds",
    )
    try:
        query.processAllAvailable()
        produce_values(broker.bootstrap, topic, 1, partition=2, start=5)
        query.processAllAvailable()
        assert latest.offsets == [(2, 5)]
    finally:
        query.stop()


def test_max_bytes_per_trigger(spark: SparkSession, broker: StromServer, tmp_path: Path) -> None:
    topic = create_topic(broker.bootstrap, "stream-bytes")
    produce(broker.bootstrap, topic, [Record(b"x" * 100) for _ in range(20)])
    sink = Collected()
    query = run(
        stream(spark, broker, subscribe=topic, maxBytesPerTrigger="500"),
        sink,
        tmp_path / "cp",
        availableNow=True,
    )
    assert query.awaitTermination(120)
    assert sink.offsets == [(0, o) for o in range(20)]
    assert sink.sizes() == [5, 5, 5, 5]


def test_min_offsets_per_trigger_waits_up_to_max_trigger_delay(
    spark: SparkSession, broker: StromServer, tmp_path: Path
) -> None:
    topic = create_topic(broker.bootstrap, "stream-min")
    sink = Collected()
    query = run(
        stream(spark, broker, subscribe=topic, minOffsetsPerTrigger="10", maxTriggerDelay="3s"),
        sink,
        tmp_path / "cp",
        processingTime="200 milliseconds",
    )
    try:
        query.processAllAvailable()  # the first trigger went: the delay counts from it
        started = time.monotonic()
        produce_values(broker.bootstrap, topic, 3)  # fewer than 10: wait for the delay
        while sum(sink.sizes()) < 3:
            assert time.monotonic() - started < 60, "the delay never let the batch run"
            time.sleep(0.1)
        waited = time.monotonic() - started
        produce_values(broker.bootstrap, topic, 12, start=3)  # enough: no waiting
        query.processAllAvailable()
        assert sink.sizes() == [3, 12]
        assert waited >= 1.5, f"3 records were read after {waited:.1f}s, before maxTriggerDelay"
    finally:
        query.stop()


def test_restart_continues_without_loss_or_duplicates(
    spark: SparkSession, broker: StromServer, tmp_path: Path
) -> None:
    topic = create_topic(broker.bootstrap, "stream-restart", partitions=2)
    produce_values(broker.bootstrap, topic, 5, partition=0)
    produce_values(broker.bootstrap, topic, 5, partition=1)
    sink = Collected()
    df = stream(spark, broker, subscribe=topic, maxOffsetsPerTrigger="4")
    query = run(df, sink, tmp_path / "cp", processingTime="100 milliseconds")
    query.processAllAvailable()
    query.stop()
    produce_values(broker.bootstrap, topic, 5, partition=0, start=5)
    produce_values(broker.bootstrap, topic, 5, partition=1, start=5)
    query = run(df, sink, tmp_path / "cp", availableNow=True)
    assert query.awaitTermination(120)
    assert sink.offsets == [(0, o) for o in range(10)] + [(1, o) for o in range(10)]


def test_new_partitions_and_matching_topics_are_picked_up(
    spark: SparkSession, broker: StromServer, tmp_path: Path
) -> None:
    prefix = unique_topic("stream-pattern")
    first = create_topic(broker.bootstrap, prefix)
    produce_values(broker.bootstrap, first, 2)
    sink = Collected()
    df = stream(spark, broker, subscribePattern=f"{prefix}-.*", includeHeaders="true")
    query = run(df, sink, tmp_path / "cp", processingTime="100 milliseconds")
    try:
        query.processAllAvailable()
        assert sink.offsets == [(0, 0), (0, 1)]
        client = admin(broker.bootstrap)
        client.create_partitions([NewPartitions(first, 2)])[first].result(10)
        produce_values(broker.bootstrap, first, 3, partition=1)
        second = create_topic(broker.bootstrap, prefix)
        produce_values(broker.bootstrap, second, 4)
        deadline = time.monotonic() + 60
        while len(sink.offsets) < 9:
            assert time.monotonic() < deadline, f"new partitions not read: {sink.batches}"
            time.sleep(0.2)
        query.processAllAvailable()
        assert len(sink.offsets) == 9
    finally:
        query.stop()


@pytest.mark.parametrize("fail", [True, False])
def test_data_loss_between_micro_batches(
    spark: SparkSession, broker: StromServer, tmp_path: Path, fail: bool
) -> None:
    topic = create_topic(broker.bootstrap, "stream-loss")
    produce_values(broker.bootstrap, topic, 5)
    sink = Collected()
    df = stream(spark, broker, subscribe=topic, failOnDataLoss=str(fail).lower())
    query = run(df, sink, tmp_path / "cp", availableNow=True)
    assert query.awaitTermination(120)
    produce_values(broker.bootstrap, topic, 10, start=5)
    client = admin(broker.bootstrap)
    futures = client.delete_records([TopicPartition(topic, 0, 9)])
    assert next(iter(futures.values())).result(10).low_watermark == 9
    query = run(df, sink, tmp_path / "cp", availableNow=True)
    if fail:
        with pytest.raises(Exception, match=rf"offsets \[5, 9\) of {topic}-0 are lost"):
            query.awaitTermination(120)
    else:
        assert query.awaitTermination(120)
        assert query.exception() is None
        assert sink.offsets == [(0, o) for o in range(5)] + [(0, o) for o in range(9, 15)]


def test_commit_to_group_shows_the_pipeline_offsets(
    spark: SparkSession, broker: StromServer, tmp_path: Path
) -> None:
    topic = create_topic(broker.bootstrap, "stream-group")
    produce_values(broker.bootstrap, topic, 7)
    group = unique_topic("pipeline")
    sink = Collected()
    df = stream(spark, broker, subscribe=topic, commitToGroup=group)
    query = run(df, sink, tmp_path / "cp", processingTime="100 milliseconds")
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    try:
        query.processAllAvailable()
        deadline = time.monotonic() + 30
        while (committed := consumer.committed([TopicPartition(topic, 0)], timeout=10))[
            0
        ].offset != 7:
            assert time.monotonic() < deadline, f"offsets not committed: {committed}"
            time.sleep(0.2)
    finally:
        query.stop()
        consumer.close()


def test_first_batch_starts_where_the_query_started_from_latest(broker: StromServer) -> None:
    """Spark asks a new query's ``initialOffset`` twice: as the start ``latestOffset`` plans the
    first batch from, and again as that batch's start when it runs it. Records arriving in
    between must not move the start: from ``latest`` that gave a false "offset went back"
    (seen in bench/sql.py's push query) or skipped the records. Spark's calls, in its order."""
    topic = create_topic(broker.bootstrap, "stream-initial")
    produce_values(broker.bootstrap, topic, 11)
    options = {"kafka.bootstrap.servers": broker.bootstrap, "subscribe": topic}
    reader = StromStreamReader(parse_read_options(options, streaming=True))
    try:
        start = reader.initialOffset()
        assert start == {topic: {"0": 11}}
        produce_values(broker.bootstrap, topic, 1, start=11)
        end = reader.latestOffset(start, ReadAllAvailable())
        assert end == {topic: {"0": 12}}
        produce_values(broker.bootstrap, topic, 1, start=12)
        (partition,) = reader.partitions(reader.initialOffset(), end)
        assert isinstance(partition, RangePartition)
        assert (partition.offsets.start, partition.offsets.end) == (11, 12)
    finally:
        reader.stop()
