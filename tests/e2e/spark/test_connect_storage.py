"""The storage sink (Confluent's S3/HDFS sink settings, into a directory) on a strom Connect
worker, driven over the REST API: a topic's records land as JSON lines, Parquet or CSV files
named ``<topic>+<partition>+<start offset>.<ext>``, ``flush.size`` records each, under the
partitioner's directories, and Spark reads the directory back; the sink's group has the offsets;
a record the converter cannot take goes to the dead letter queue; Avro files are object
container files of the values' schema, in the configured codec.
The storage source restores such files to their topics and partitions, in offset order, or
takes any files matching its patterns into topics. Bad settings are named by validate."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import fastavro
import httpx
from pyspark.sql import SparkSession
from strom_harness import StromServer

from e2e.spark.clients import Record, consume_all, create_topic, produce
from e2e.spark.connect_api import create, eventually, states
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
    dlq = create_topic(broker.bootstrap, "storage-dlq")
    produce(broker.bootstrap, topic, [*_people(5), Record(b"not json")])
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
                "errors.tolerance": "all",
                "errors.deadletterqueue.topic.name": dlq,
                **SCHEMALESS,
            },
        )
        files = eventually(_files(store, 3), "three files")
        [letter] = eventually(lambda: consume_all(broker.bootstrap, dlq), "the bad record")
        assert letter.value == b"not json"
        assert files == [
            f"topics/{topic}/partition=0/{topic}+0+{start:010d}.json" for start in (0, 2, 4)
        ]
        rows = spark.read.json(str(store / "topics" / topic)).orderBy("id").collect()
        assert [(r.id, r.name, r.partition) for r in rows] == [(i, f"n{i}", 0) for i in range(5)]
        offsets = {
            "partition": {"kafka_topic": topic, "kafka_partition": 0},
            "offset": {"kafka_offset": 6},
        }
        eventually(
            lambda: api.get("/connectors/lake-json/offsets").json()["offsets"] == [offsets],
            "the sink's offsets",
        )
        produce(broker.bootstrap, topic, _people(1))
        assert eventually(_files(store, 4), "a fourth file")[3].endswith(f"+{6:010d}.json")


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


def test_a_backup_restored_in_order_and_files_taken_as_they_come(
    spark: SparkSession, broker: StromServer, tmp_path: Path
) -> None:
    topic = create_topic(broker.bootstrap, "storage-backup", partitions=2)
    restored = create_topic(broker.bootstrap, "storage-restored", partitions=2)
    sales_topic = create_topic(broker.bootstrap, "storage-sales")
    people = [
        Record(json.dumps({"id": i, "name": f"n{i}"}).encode(), partition=i % 2) for i in range(7)
    ]
    produce(broker.bootstrap, topic, people)
    store, incoming = tmp_path / "lake", tmp_path / "incoming"
    with (
        Connect(broker.bootstrap, spark=lambda: spark) as worker,
        httpx.Client(base_url=worker.url, timeout=60) as api,
    ):
        common = {"store.url": str(store), "format.class": "JsonFormat", **SCHEMALESS}
        create(api, "backup", {**common, "connector.class": "StorageSink", "topics": topic,
                               "flush.size": "2"})  # fmt: skip
        eventually(_files(store, 4), "four files")  # partition 0: 0 2 | 4 6; 1: 1 3 | 5
        create(
            api,
            "restore",
            {
                **common,
                "connector.class": "strom.connect.storage.StorageSourceConnector",
                "transforms": "rename",
                "transforms.rename.type": "RegexRouter",
                "transforms.rename.regex": ".*",
                "transforms.rename.replacement": restored,
            },
        )
        # nothing there yet: the connector waits for a first file, RUNNING
        sales = {**common, "connector.class": "StorageSource", "store.url": str(incoming)}
        create(api, "sales", sales | {"format.class": "CsvFormat", "mode": "GENERALIZED",
                                      "topic.regex.list": f"{sales_topic}:^sales/.*"})  # fmt: skip

        def read_back() -> list[Record] | None:
            found = consume_all(broker.bootstrap, restored, partitions=2)
            return found if len(found) == len(people) else None

        back = eventually(read_back, "every record restored")
        by_partition = sorted(back, key=lambda r: r.partition)  # each in its offset order
        assert [(r.partition, json.loads(r.value or b"")["id"]) for r in by_partition] == [
            (0, 0), (0, 2), (0, 4), (0, 6), (1, 1), (1, 3), (1, 5)
        ]  # fmt: skip
        assert states(api, "sales")[0] == "RUNNING"
        for folder, name, rows in (("sales", "a", "1,apple\n2,pear\n"), ("misc", "b", "9,no\n")):
            (incoming / "topics" / folder).mkdir(parents=True, exist_ok=True)
            (incoming / "topics" / folder / f".{name}.tmp").write_text(f"id,item\n{rows}")
            (incoming / "topics" / folder / f".{name}.tmp").rename(
                incoming / "topics" / folder / f"{name}.csv"
            )
        taken = eventually(
            lambda: consume_all(broker.bootstrap, sales_topic) or None, "the sales rows"
        )
        assert sorted(json.loads(r.value or b"")["item"] for r in taken) == ["apple", "pear"]


def test_avro_files_read_by_fastavro_and_restored_to_a_topic(
    spark: SparkSession, broker: StromServer, tmp_path: Path
) -> None:
    topic = create_topic(broker.bootstrap, "storage-avro")
    restored = create_topic(broker.bootstrap, "storage-avro-restored")
    produce(broker.bootstrap, topic, _people(3))
    store = tmp_path / "lake"
    common = {"store.url": str(store), "format.class": "AvroFormat", **SCHEMALESS}
    with (
        Connect(broker.bootstrap, spark=lambda: spark) as worker,
        httpx.Client(base_url=worker.url, timeout=60) as api,
    ):
        create(
            api,
            "lake-avro",
            {
                **common,
                "connector.class": "StorageSink",
                "topics": topic,
                "format.class": "io.confluent.connect.s3.format.avro.AvroFormat",
                "avro.codec": "snappy",
                "flush.size": "2",
            },
        )
        files = eventually(_files(store, 2), "two files")
        assert files == [f"topics/{topic}/partition=0/{topic}+0+{s:010d}.avro" for s in (0, 2)]
        records: list[object] = []
        for name in files:
            with (store / name).open("rb") as data:
                reader = fastavro.reader(data)
                assert reader.codec == "snappy"
                schema = reader.writer_schema
                assert isinstance(schema, dict)
                assert schema["name"] == "io.confluent.connect.avro.ConnectDefault"
                records.extend(reader)
        people = [{"id": i, "name": f"n{i}", "country": "fr" if i % 2 else "de"} for i in range(3)]
        assert records == people
        create(api, "restore-avro", {**common, "connector.class": "StorageSource",
                                     "transforms": "to", "transforms.to.type": "RegexRouter",
                                     "transforms.to.regex": ".*",
                                     "transforms.to.replacement": restored})  # fmt: skip

        def read_back() -> list[Record] | None:
            found = consume_all(broker.bootstrap, restored)
            return found if len(found) == len(people) else None

        back = eventually(read_back, "every record restored")
        assert [json.loads(r.value or b"") for r in back] == people


def test_validate_names_each_bad_layout_setting() -> None:
    answer = find_plugin("StorageSink").validate(
        {
            "connector.class": "StorageSink",
            "name": "bad",
            "topics": "t",
            "store.url": "s3://bucket",
            "format.class": "ByteArrayFormat",
            "avro.codec": "zstd",
            "flush.size": "0",
            "partitioner.class": "FieldPartitioner",
        }
    )
    errors = {
        c["value"]["name"]: c["value"]["errors"] for c in answer["configs"] if c["value"]["errors"]
    }
    assert set(errors) == {
        "store.url", "format.class", "avro.codec", "flush.size", "partition.field.name"
    }  # fmt: skip
    assert errors["avro.codec"][0].endswith("String must be one of: null, deflate, snappy")
    assert answer["error_count"] == 5
    source = find_plugin("StorageSource").validate(
        {
            "connector.class": "StorageSource",
            "name": "bad",
            "store.url": "hdfs://nn/data",
            "format.class": "ParquetFormat",
            "mode": "GENERALIZED",
            "topic.regex.list": "sales:^(unclosed,:x",
        }
    )
    problems = {c["value"]["name"]: c["value"]["errors"] for c in source["configs"]}
    assert problems["store.url"] == ["strom stores in local or shared directories: hdfs://nn/data "
                                     "is not one"]  # fmt: skip
    assert problems["topic.regex.list"][0].startswith("Invalid regex ^(unclosed for topic sales")
    assert problems["topic.regex.list"][1] == "Invalid entry ':x': each is topic:regex"
