"""Writes (``df.write``/``writeStream.format("strom")``) read back by a plain consumer: keys,
partitions, headers, the ``topic`` option winning over the column, a streaming copy pipeline,
and bad DataFrames refused before any record is written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from strom_harness import StromServer

import strom.spark
from e2e.spark.clients import consume_all, create_topic, produce_values

HEADERS = "array<struct<key:string,value:binary>>"


def test_batch_write_with_keys_partitions_and_headers(
    spark: SparkSession, broker: StromServer
) -> None:
    topic = create_topic(broker.bootstrap, "write-batch", partitions=2)
    df = spark.createDataFrame(
        [
            (topic, "k1", "one", 1, [("h", b"x")]),
            (topic, None, "two", 0, None),
            (topic, "k3", "three", 1, [("a", b"1"), ("b", None)]),
        ],
        f"topic string, key string, value string, partition int, headers {HEADERS}",
    ).coalesce(1)
    # Python data sources take Append or Overwrite only (Spark's Kafka sink: Append, or its
    # default ErrorIfExists); strom refuses Overwrite.
    df.write.format("strom").option("kafka.bootstrap.servers", broker.bootstrap).mode(
        "append"
    ).save()
    got = {
        (r.partition, r.key, r.value, tuple(r.headers))
        for r in consume_all(broker.bootstrap, topic, 2)
    }
    assert got == {
        (1, b"k1", b"one", (("h", b"x"),)),
        (0, None, b"two", ()),
        (1, b"k3", b"three", (("a", b"1"), ("b", None))),
    }


def test_topic_option_wins_over_the_column(spark: SparkSession, broker: StromServer) -> None:
    topic = create_topic(broker.bootstrap, "write-option")
    df = spark.createDataFrame([("elsewhere", b"v")], "topic string, value binary")
    (
        df.write.format("strom")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("topic", topic)
        .mode("append")
        .save()
    )
    assert [r.value for r in consume_all(broker.bootstrap, topic)] == [b"v"]


def test_a_batch_larger_than_the_producer_queue_is_all_written(
    spark: SparkSession, broker: StromServer
) -> None:
    # No headers, partitions or timestamps: the whole batch goes to produce_batch, whose
    # records a full queue refuses are handed again once deliveries drained it.
    topic = create_topic(broker.bootstrap, "write-queue-full")
    df = spark.range(3000).select(F.col("id").cast("string").alias("value")).coalesce(1)
    (
        df.write.format("strom")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("kafka.queue.buffering.max.messages", "100")
        .option("topic", topic)
        .mode("append")
        .save()
    )
    got = [r.value for r in consume_all(broker.bootstrap, topic)]
    assert got == [str(i).encode() for i in range(3000)]


def test_partitions_of_a_batch_without_headers(spark: SparkSession, broker: StromServer) -> None:
    # Each record's partition and timestamp survive the write, with no header on any record
    # (empty lists, as a mirror's records without headers): confluent-kafka 2.16's
    # produce_batch ignores per-message partitions and refuses timestamps, so batches that give
    # them must not take the sink's produce_batch path.
    topic = create_topic(broker.bootstrap, "write-batch-fields", partitions=3)
    Row = tuple[int | None, int | None, str, list[tuple[str, bytes]]]
    rows: list[Row] = [(i % 3, None, str(i), []) for i in range(300)]
    stamped: list[Row] = [(i % 3, 1_700_000_000_000 + i, f"t{i}", []) for i in range(3)]
    mixed: list[Row] = [(None if i % 2 else 2, None, f"m{i}", []) for i in range(4)]
    for batch in (rows, stamped, mixed):
        df = spark.createDataFrame(
            batch, f"partition int, timestamp long, value string, headers {HEADERS}"
        ).coalesce(1)
        (
            df.write.format("strom")
            .option("kafka.bootstrap.servers", broker.bootstrap)
            .option("topic", topic)
            .option("includeTimestamp", "true")
            .mode("append")
            .save()
        )
    got = consume_all(broker.bootstrap, topic, 3)
    placed = {(r.value or b"").decode(): r.partition for r in got}
    assert len(got) == 307
    assert all(placed[str(i)] == i % 3 for i in range(300))
    assert placed["m0"] == 2 and placed["m2"] == 2
    assert sorted((r.partition, r.timestamp) for r in got if (r.value or b"").startswith(b"t")) == [
        (i, 1_700_000_000_000 + i) for i in range(3)
    ]


@pytest.mark.parametrize(
    ("schema", "options", "message"),
    [
        ("value int", {"topic": "t"}, "'value' attribute type must be a string or binary"),
        ("key int, value string", {"topic": "t"}, "'key' attribute type must be"),
        ("value string", {}, "topic option required when no 'topic' attribute"),
        ("key string", {"topic": "t"}, "required attribute 'value' not found"),
        ("value string, partition string", {"topic": "t"}, "'partition' attribute type"),
        ("value string", {"topic": "t", "kafka.value.serializer": "x"}, "'value.serializer'"),
        ("value string", {"topic": "t", "mode": "overwrite"}, "Overwrite is not allowed"),
        ("value string", {"topic": "t", "kafka.no.such": "1"}, "bad kafka.* option: No such"),
    ],
)
def test_bad_dataframes_are_refused(
    spark: SparkSession, broker: StromServer, schema: str, options: dict[str, str], message: str
) -> None:
    df = spark.createDataFrame([], schema)
    options = dict(options)
    mode = options.pop("mode", "append")
    writer = df.write.format("strom").option("kafka.bootstrap.servers", broker.bootstrap)
    with pytest.raises(Exception, match=message):
        writer.options(**options).mode(mode).save()


def test_streaming_copy_pipeline(spark: SparkSession, broker: StromServer, tmp_path: Path) -> None:
    source = create_topic(broker.bootstrap, "copy-in", partitions=2)
    target = create_topic(broker.bootstrap, "copy-out")
    produce_values(broker.bootstrap, source, 30, partition=0)
    produce_values(broker.bootstrap, source, 20, partition=1)
    copied = (
        spark.readStream.format("strom")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", source)
        .option("startingOffsets", "earliest")
        .load()
        .select(F.upper(F.col("value").cast("string")).alias("value"), "key")
    )
    query = (
        copied.writeStream.format("strom")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("topic", target)
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120)
    values = sorted(r.value or b"" for r in consume_all(broker.bootstrap, target))
    assert values == sorted([b"V%d" % i for i in range(30)] + [b"V%d" % i for i in range(20)])


AVRO = json.dumps(
    {
        "type": "record",
        "name": "Order",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "item", "type": ["null", "string"]},
            {"name": "tags", "type": {"type": "array", "items": "string"}},
        ],
    }
)


@pytest.mark.parametrize("fmt", ["json", "avro", "string"])
def test_value_formats_round_trip(spark: SparkSession, broker: StromServer, fmt: str) -> None:
    topic = create_topic(broker.bootstrap, f"formats-{fmt}")
    df = spark.createDataFrame(
        [(1, "pen", ["a"]), (2, None, [])], "id long, item string, tags array<string>"
    )
    column = F.col("item") if fmt == "string" else F.struct("id", "item", "tags")
    schema = AVRO if fmt == "avro" else None
    (
        df.select(strom.spark.encode_value(column, fmt, schema).alias("value"))
        .write.format("strom")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("topic", topic)
        .mode("append")
        .save()
    )
    read = (
        spark.read.format("strom")
        .option("kafka.bootstrap.servers", broker.bootstrap)
        .option("subscribe", topic)
        .load()
    )
    if fmt == "string":
        got = read.select(strom.spark.decode_value(F.col("value"), "string").alias("v")).collect()
        assert sorted(str(r.v) for r in got) == ["None", "pen"]
        return
    decoded = strom.spark.decode_value(F.col("value"), fmt, AVRO if fmt == "avro" else df.schema)
    rows = read.select(decoded.alias("v")).select("v.*").orderBy("id").collect()
    assert [tuple(r) for r in rows] == [(1, "pen", ["a"]), (2, None, [])]
