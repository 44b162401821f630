"""``strom.spark.write_stream`` in update mode: a windowless streaming aggregation written to a
topic and read back by a consumer. The latest value per key equals the same aggregation done
as a batch, after each run; a replayed micro-batch is written again, unless ``exactly_once``."""

from __future__ import annotations

import shutil
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from strom_harness import StromServer

import strom.spark
from e2e.spark.clients import Record, consume_all, create_topic, produce

WORDS = ["apple", "pear", "apple", "fig", "pear", "apple"]
MORE_WORDS = ["fig", "kiwi", "apple"]


def _counts(df: DataFrame) -> DataFrame:
    """Words (the records' values) and how often each came, as key and value strings."""
    word = F.col("value").cast("string")
    return (
        df.groupBy(word.alias("key"))
        .agg(F.count("*").cast("string").alias("value"))
        .select("key", "value")
    )


def _run(
    spark: SparkSession,
    broker: StromServer,
    source: str,
    target: str,
    checkpoint: Path,
    *,
    exactly_once: bool,
) -> None:
    stream = (
        spark.readStream.format("strom")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .load()
    )
    query = strom.spark.write_stream(
        _counts(stream),
        topic=target,
        checkpoint=str(checkpoint),
        output_mode="update",
        trigger={"availableNow": True},
        exactly_once=exactly_once,
        kafka_bootstrap_servers=broker.bootstrap,
    )
    query.awaitTermination(120)
    assert query.exception() is None


def _latest(broker: StromServer, topic: str) -> dict[str, str]:
    latest: dict[str, str] = {}
    for record in consume_all(broker.bootstrap, topic):
        assert record.key is not None and record.value is not None
        latest[record.key.decode()] = record.value.decode()
    return latest


def _recomputed(spark: SparkSession, broker: StromServer, source: str) -> dict[str, str]:
    batch = (
        spark.read.format("strom")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", source)
        .load()
    )
    return {row.key: row.value for row in _counts(batch).collect()}


def test_update_mode_keeps_the_latest_count_of_each_key_and_writes_a_replay_once(
    spark: SparkSession, broker: StromServer, tmp_path: Path
) -> None:
    source = create_topic(broker.bootstrap, "update-words")
    target = create_topic(broker.bootstrap, "update-counts")
    checkpoint = tmp_path / "checkpoint"
    produce(broker.bootstrap, source, [Record(w.encode()) for w in WORDS])
    _run(spark, broker, source, target, checkpoint, exactly_once=True)
    assert _latest(broker, target) == _recomputed(spark, broker, source)
    assert _latest(broker, target) == {"apple": "3", "pear": "2", "fig": "1"}

    produce(broker.bootstrap, source, [Record(w.encode()) for w in MORE_WORDS])
    written = len(consume_all(broker.bootstrap, target))
    _run(spark, broker, source, target, checkpoint, exactly_once=True)
    assert _latest(broker, target) == _recomputed(spark, broker, source)
    # Update mode writes only the keys the second batch changed.
    records = [(r.key, r.value) for r in consume_all(broker.bootstrap, target)]
    assert len(records) == written + 3

    _forget_last_batch(checkpoint, tmp_path)
    _run(spark, broker, source, target, checkpoint, exactly_once=True)
    # The replay found its batch marker and wrote nothing.
    assert [(r.key, r.value) for r in consume_all(broker.bootstrap, target)] == records


def test_without_exactly_once_a_replayed_micro_batch_is_written_again(
    spark: SparkSession, broker: StromServer, tmp_path: Path
) -> None:
    source = create_topic(broker.bootstrap, "update-replay-words")
    target = create_topic(broker.bootstrap, "update-replay-counts")
    checkpoint = tmp_path / "checkpoint"
    produce(broker.bootstrap, source, [Record(w.encode()) for w in WORDS])
    _run(spark, broker, source, target, checkpoint, exactly_once=False)
    written = [(r.key, r.value) for r in consume_all(broker.bootstrap, target)]
    _forget_last_batch(checkpoint, tmp_path)
    _run(spark, broker, source, target, checkpoint, exactly_once=False)
    again = [(r.key, r.value) for r in consume_all(broker.bootstrap, target)]
    assert sorted(again) == sorted(written * 2)  # at least once: the batch twice


def _forget_last_batch(checkpoint: Path, aside: Path) -> None:
    """As if the driver died after the batch was written but before Spark recorded the
    micro-batch: without its commit-log entry, the restarted query runs it again."""
    commits = sorted((checkpoint / "commits").glob("[0-9]*"), key=lambda p: int(p.name))
    last = commits[-1]
    for path in (last, last.with_name(f".{last.name}.crc")):
        shutil.move(path, aside / f"removed{path.name}")
