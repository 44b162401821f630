"""The storage sink (Confluent's S3/HDFS sink settings, into a directory) on a strom Connect
worker, driven over the REST API: a topic's records land as JSON lines, Parquet or CSV files
named ``<topic>+<partition>+<start offset>.<ext>``, ``flush.size`` records each, under the
partitioner's directories, and Spark reads the directory back; the sink's group has the offsets.
Bad settings are named by validate."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import httpx
from pyspark.sql import SparkSession
from strom_harness import StromServer

from e2e.spark.clients import Record, create_topic, produce
from e2e.spark.connect_api import create, eventually
from strom.connect.plugins import find_plugin
from strom.testing.connect import Connect

SCHEMALESS = {
    "value.converter": "org.apache.kafka.connect.json.JsonConverter",
    "value.converter.schemas.enable": "false",
}
HOUR_MS = 1_795_903_200_000  # 2026-11-28T22:00:00Z: 17:00 in New York


def _files(root: Path, count: int) -> Callable[[], list[str] | None]:
    def check() -> list[str] | None:
        found = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
        return found if len(found) >= count else None

    return check


def _people(count: int) -> list[Record]:
    return [
        Record(
            json.dumps({"id": i, "name": f"n{i}", "country": "fr" if i % 2 else "de"}).encode(),
            timestamp=HOUR_MS + i,
        )
        for i in range(count)
    ]


def test_json_files_roll_by_flush_size_and_spark_reads_them_back(
    spark: SparkSession, broker: StromServer, tmp_path: Path
) -> None:
    topic = create_topic(broker.bootstrap, "storage-json")
    produce(broker.bootstrap, topic, _people(5))
    store = tmp_path / "lake"
    with (
        Connect(broker.bootstrap, spark=lambda: spark) as worker,
        httpx.Client(base_url=worker.url, timeout=60) as api,
    ):
        create(
            api,
            "lake-json",
            {
                "connector.class": "strom.connect.storage.StorageSinkConnector",
                "topics": topic,
                "store.url": f"file://{store}",
                "format.class": "io.confluent.connect.s3.format.json.JsonFormat",
                "flush.size": "2",
                **SCHEMALESS,
            },
        )
        files = eventually(_files(store, 3), "three files")
        assert files == [
            f"topics/{topic}/partition=0/{topic}+0+{start:010d}.json" for start in (0, 2, 4)
        ]
        rows = spark.read.json(str(store / "topics" / topic)).orderBy("id").collect()
        assert [(r.id, r.name, r.partition) for r in rows] == [(i, f"n{i}", 0) for i in range(5)]
        offsets = {
            "partition": {"kafka_topic": topic, "kafka_partition": 0},
            "offset": {"kafka_offset": 5},
        }
        eventually(
            lambda: api.get("/connectors/lake-json/offsets").json()["offsets"] == [offsets],
            "the sink's offsets",
        )
        produce(broker.bootstrap, topic, _people(1))
        assert eventually(_files(store, 4), "a fourth file")[3].endswith(f"+{5:010d}.json")


def test_parquet_by_field_and_csv_by_hour_in_a_time_zone(
    spark: SparkSession, broker: StromServer, tmp_path: Path
) -> None:
    topic = create_topic(broker.bootstrap, "storage-parquet")
    produce(broker.bootstrap, topic, _people(4))
    store = tmp_path / "lake"
    common = {"topics": topic, "connector.class": "StorageSink", "flush.size": "100"}
    with (
        Connect(broker.bootstrap, spark=lambda: spark) as worker,
        httpx.Client(base_url=worker.url, timeout=60) as api,
    ):
        create(
            api,
            "lake-parquet",
            {
                **common,
                **SCHEMALESS,
                "store.url": str(store),
                "format.class": "ParquetFormat",
                "partitioner.class": "io.confluent.connect.storage.partitioner.FieldPartitioner",
                "partition.field.name": "country",
            },
        )
        create(
            api,
            "lake-csv",
            {
                **common,
                **SCHEMALESS,
                "store.url": str(store),
                "topics.dir": "hourly",
                "format.class": "CsvFormat",
                "partitioner.class": "HourlyPartitioner",
                "timestamp.extractor": "Record",
                "locale": "en-US",
                "timezone": "America/New_York",
            },
        )
        eventually(_files(store, 3), "three files")
        rows = spark.read.parquet(str(store / "topics" / topic)).orderBy("id").collect()
        assert [(r.id, r.country) for r in rows] == [(0, "de"), (1, "fr"), (2, "de"), (3, "fr")]
        hourly = store / "hourly" / topic / "year=2026" / "month=11" / "day=28" / "hour=17"
        assert [p.name for p in hourly.iterdir()] == [f"{topic}+0+{0:010d}.csv"]
        read = spark.read.option("header", "true").csv(str(store / "hourly" / topic))
        assert sorted(r.name for r in read.collect()) == [f"n{i}" for i in range(4)]


def test_validate_names_each_bad_layout_setting() -> None:
    answer = find_plugin("StorageSink").validate(
        {
            "connector.class": "StorageSink",
            "name": "bad",
            "topics": "t",
            "store.url": "s3://bucket",
            "format.class": "AvroFormat",
            "flush.size": "0",
            "partitioner.class": "FieldPartitioner",
        }
    )
    errors = {
        c["value"]["name"]: c["value"]["errors"] for c in answer["configs"] if c["value"]["errors"]
    }
    assert set(errors) == {"store.url", "format.class", "flush.size", "partition.field.name"}
    assert answer["error_count"] == 4
