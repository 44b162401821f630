"""Batch reads (``spark.read.format("strom")``): schema, every starting/ending option, headers,
``minPartitions``, compaction gaps and data loss, and bad options failing with one message."""

from __future__ import annotations

import json
import time
from typing import Any

import pyspark
import pytest
from confluent_kafka import Producer, TopicPartition
from pyspark.sql import DataFrame, SparkSession
from strom_harness import StromServer

from e2e.spark.clients import Record, admin, consume_all, create_topic, produce, produce_values

KAFKA_SCHEMA = (
    "struct<key:binary,value:binary,topic:string,partition:int,offset:bigint,"
    "timestamp:timestamp,timestampType:int>"
)


def read(spark: SparkSession, broker: StromServer, topic: str, **options: str) -> DataFrame:
    reader = spark.read.format("strom").option("kafka.bootstrap.servers", broker.bootstrap)
    if not any(k in options for k in ("assign", "subscribePattern")):
        reader = reader.option("subscribe", topic)
    return reader.options(**options).load()


def offsets(df: DataFrame) -> list[tuple[int, int]]:
    return sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())


def test_rows_are_what_a_consumer_reads(spark: SparkSession, broker: StromServer) -> None:
    topic = create_topic(broker.bootstrap, "batch-rows", partitions=2)
    produce(
        broker.bootstrap,
        topic,
        [
            Record(b"one", b"k1", 0, (("h1", b"x"), ("h2", None)), timestamp=1_000),
            Record(None, b"k2", 0),
            Record(b"three", None, 1, (("h", b"y"),), timestamp=3_000),
        ],
    )
    plain = read(spark, broker, topic)
    assert plain.schema.simpleString() == KAFKA_SCHEMA
    with_headers = read(spark, broker, topic, includeHeaders="true")
    assert with_headers.schema.simpleString() == (
        KAFKA_SCHEMA[:-1] + ",headers:array<struct<key:string,value:binary>>>"
    )
    rows = sorted(with_headers.collect(), key=lambda r: (r.partition, r.offset))
    expected = sorted(
        consume_all(broker.bootstrap, topic, 2), key=lambda e: (e.partition, e.offset)
    )
    assert [(r.partition, r.offset, r.key, r.value) for r in rows] == [
        (e.partition, e.offset, e.key, e.value) for e in expected
    ]
    assert [r.headers for r in rows] == [
        [("h1", b"x"), ("h2", None)],
        None,
        [("h", b"y")],
    ]
    assert {r.topic for r in rows} == {topic}
    assert {r.timestampType for r in rows} == {0}  # create time, as Spark numbers it
    assert int(rows[0].timestamp.timestamp() * 1000) == 1_000
    assert int(rows[2].timestamp.timestamp() * 1000) == 3_000


def test_starting_and_ending_offsets(spark: SparkSession, broker: StromServer) -> None:
    topic = create_topic(broker.bootstrap, "batch-offsets", partitions=2)
    produce_values(broker.bootstrap, topic, 6, partition=0)
    produce_values(broker.bootstrap, topic, 4, partition=1)
    every = [(0, o) for o in range(6)] + [(1, o) for o in range(4)]
    assert offsets(read(spark, broker, topic)) == every
    assert (
        offsets(read(spark, broker, topic, startingOffsets="earliest", endingOffsets="latest"))
        == every
    )
    start = json.dumps({topic: {"0": 2, "1": -2}})
    end = json.dumps({topic: {"0": 5, "1": -1}})
    got = offsets(read(spark, broker, topic, startingOffsets=start, endingOffsets=end))
    assert got == [(0, 2), (0, 3), (0, 4), (1, 0), (1, 1), (1, 2), (1, 3)]
    assign = json.dumps({topic: [1]})
    got = offsets(read(spark, broker, topic, assign=assign))
    assert got == [(1, o) for o in range(4)]
    pattern = read(spark, broker, topic, subscribePattern=topic.replace("-", "[-]"))
    assert offsets(pattern) == every


def test_timestamps(spark: SparkSession, broker: StromServer) -> None:
    topic = create_topic(broker.bootstrap, "batch-time", partitions=2)
    produce(
        broker.bootstrap,
        topic,
        [Record(b"a%d" % t, partition=0, timestamp=t) for t in (1_000, 2_000, 3_000, 4_000)]
        + [Record(b"b%d" % t, partition=1, timestamp=t) for t in (1_500, 2_500)],
    )
    got = offsets(read(spark, broker, topic, startingTimestamp="2000", endingTimestamp="4000"))
    assert got == [(0, 1), (0, 2), (1, 1)]
    start = json.dumps({topic: {"0": 3_000, "1": 1_000}})
    end = json.dumps({topic: {"0": 9_000, "1": 2_000}})
    got = offsets(
        read(spark, broker, topic, startingOffsetsByTimestamp=start, endingOffsetsByTimestamp=end)
    )
    assert got == [(0, 2), (0, 3), (1, 0)]  # no record at or after 9000: the latest offset
    late = json.dumps({topic: {"0": 9_000, "1": 1_000}})
    with pytest.raises(Exception, match="no offset matched timestamp 9000"):
        read(spark, broker, topic, startingOffsetsByTimestamp=late).collect()
    got = offsets(
        read(
            spark,
            broker,
            topic,
            startingOffsetsByTimestamp=late,
            startingOffsetsByTimestampStrategy="latest",
        )
    )
    assert got == [(1, 0), (1, 1)]


def test_min_partitions_splits_ranges(spark: SparkSession, broker: StromServer) -> None:
    topic = create_topic(broker.bootstrap, "batch-split")
    produce_values(broker.bootstrap, topic, 100)
    df = read(spark, broker, topic, minPartitions="4")
    assert df.rdd.getNumPartitions() == 4
    assert offsets(df) == [(0, o) for o in range(100)]
    assert read(spark, broker, topic).rdd.getNumPartitions() == 1


def test_compaction_gaps_are_not_data_loss(spark: SparkSession, broker: StromServer) -> None:
    topic = create_topic(
        broker.bootstrap,
        "batch-compacted",
        config={
            "cleanup.policy": "compact",
            "segment.bytes": "1024",
            "min.cleanable.dirty.ratio": "0.01",
        },
    )
    for round_ in range(20):
        produce(broker.bootstrap, topic, [Record(b"v%d" % round_, b"k%d" % k) for k in range(4)])
    deadline = time.monotonic() + 30
    while len(remaining := consume_all(broker.bootstrap, topic)) >= 80:
        assert time.monotonic() < deadline, "the cleaner did not compact the topic"
        time.sleep(0.3)
    df = read(spark, broker, topic, failOnDataLoss="true")
    assert offsets(df) == [(0, r.offset) for r in remaining]


def delete_records(broker: StromServer, topic: str, before: int) -> None:
    client = admin(broker.bootstrap)
    futures = client.delete_records([TopicPartition(topic, 0, before)])
    for future in futures.values():
        assert future.result(10).low_watermark == before


def test_deleted_records_are_reported_with_their_offsets(
    spark: SparkSession, broker: StromServer
) -> None:
    topic = create_topic(broker.bootstrap, "batch-loss")
    produce_values(broker.bootstrap, topic, 10)
    delete_records(broker, topic, 4)
    start = json.dumps({topic: {"0": 1}})
    with pytest.raises(Exception, match=rf"offsets \[1, 4\) of {topic}-0 are lost"):
        read(spark, broker, topic, startingOffsets=start).collect()
    got = offsets(read(spark, broker, topic, startingOffsets=start, failOnDataLoss="false"))
    assert got == [(0, o) for o in range(4, 10)]
    assert offsets(read(spark, broker, topic)) == [(0, o) for o in range(4, 10)]


def test_ending_offsets_past_the_log_end_fail_as_sparks_kafka_source_does(
    spark: SparkSession, broker: StromServer
) -> None:
    topic = create_topic(broker.bootstrap, "batch-past-end")
    produce_values(broker.bootstrap, topic, 5)
    end = json.dumps({topic: {"0": 8}})
    with pytest.raises(Exception, match=rf"{topic}-0 up to offset 8, but its log ends at 5"):
        read(spark, broker, topic, endingOffsets=end).collect()
    got = offsets(read(spark, broker, topic, endingOffsets=end, failOnDataLoss="false"))
    assert got == [(0, o) for o in range(5)]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"subscribe": "t", "assign": '{"t":[0]}'}, "Only one of the options"),
        ({}, "One of the options subscribe, subscribePattern, assign must be specified"),
        ({"subscribe": "t", "kafka.bootstrap.servers": ""}, "'kafka.bootstrap.servers' must be"),
        ({"subscribe": "t", "startingOffsets": "latest"}, "can't be latest for batch"),
        ({"subscribe": "t", "endingOffsets": "earliest"}, "can't be earliest for batch"),
        ({"subscribe": "t", "startingOffsets": '{"t":{"0":-1}}'}, "t-0 can't be latest"),
        ({"subscribe": "t", "startingOffsets": '{"t": [1'}, "'startingOffsets' is not valid JSON"),
        ({"subscribe": "t", "kafka.auto.offset.reset": "earliest"}, "set the source option"),
        ({"subscribe": "t", "kafka.enable.auto.commit": "true"}, "'enable.auto.commit' is not"),
        ({"subscribe": "t", "kafka.no.such.setting": "1"}, "bad kafka.\\* option"),
        ({"subscribe": "t", "minPartitions": "0"}, "'minPartitions' must be at least 1"),
        ({"assign": '{"t":"0"}'}, "option 'assign' must look like"),
    ],
)
def test_bad_options_fail_with_one_message(
    spark: SparkSession, broker: StromServer, options: dict[str, str], message: str
) -> None:
    reader: Any = spark.read.format("strom").option("kafka.bootstrap.servers", broker.bootstrap)
    with pytest.raises(Exception, match=message):
        reader.options(**options).load().collect()


def test_unreachable_broker_fails_fast(spark: SparkSession) -> None:
    started = time.monotonic()
    reader = spark.read.format("strom").options(
        **{
            "kafka.bootstrap.servers": "127.0.0.1:1",
            "kafka.default.api.timeout.ms": "1500",
            "subscribe": "t",
        }
    )
    with pytest.raises(Exception, match=r"cannot reach the cluster at '127\.0\.0\.1:1'"):
        reader.load().collect()
    assert time.monotonic() - started < 30


def test_read_committed_skips_aborted_and_stops_at_an_open_transaction(
    spark: SparkSession, broker: StromServer
) -> None:
    topic = create_topic(broker.bootstrap, "batch-txn")
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": topic})
    producer.init_transactions(15)
    for batch, commit in (((b"c1", b"c2"), True), ((b"a1", b"a2"), False), ((b"c3",), True)):
        producer.begin_transaction()
        for value in batch:
            producer.produce(topic, value=value)
        assert producer.flush(15) == 0  # written before the end (an abort drops unsent ones)
        if commit:
            producer.commit_transaction(15)
        else:
            producer.abort_transaction(15)
    producer.begin_transaction()
    producer.produce(topic, value=b"open")
    assert producer.flush(15) == 0  # written, not committed: it holds the last stable offset

    def values(isolation: str) -> list[bytes]:
        df = read(spark, broker, topic, **{"kafka.isolation.level": isolation})
        return [r.value for r in df.orderBy("offset").collect()]

    assert values("read_committed") == [b"c1", b"c2", b"c3"]
    assert values("read_uncommitted") == [b"c1", b"c2", b"a1", b"a2", b"c3", b"open"]
    producer.commit_transaction(15)
    assert values("read_committed") == [b"c1", b"c2", b"c3", b"open"]


def test_python_workers_import_pyspark_compiled_not_from_spark_s_zip(spark: SparkSession) -> None:
    """Spark puts ``pyspark.zip`` first on its workers' PYTHONPATH; imported from there, every
    worker process would compile PySpark again (``strom.spark.session.WORKER_SITE``)."""
    files = spark.sparkContext.parallelize(range(2), 2).map(lambda _: pyspark.__file__).collect()
    assert files and all(".zip" not in f and f.endswith("__init__.py") for f in files), files
