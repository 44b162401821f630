"""Kafka Connect's single message transforms and predicates as Spark column expressions, each
checked against Kafka's documented behaviour on a small record DataFrame (local rows: Spark
answers from the driver, with no job per check)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from pyspark.sql import DataFrame, Row, SparkSession
from strom_harness import StromServer

from e2e.spark.clients import Record, consume_all, create_topic, produce
from e2e.spark.connect_api import create, eventually, states
from strom.connect.transforms.columns import Names, apply
from strom.connect.transforms.specs import chain
from strom.testing.connect import Connect

SCHEMA = (
    "key string, value struct<id:int, name:string, address:struct<city:string, zip:string>,"
    " price:double, card:string, paid:boolean>, topic string,"
    " headers array<struct<key:string, value:binary>>, timestamp timestamp, partition int,"
    " offset long"
)
STAMP = datetime(2024, 3, 4, 23, 30, 5, tzinfo=UTC)


@pytest.fixture
def far_session_zone(spark: SparkSession) -> Iterator[None]:
    """A session time zone far from UTC: Kafka formats and parses timestamps in UTC."""
    before = spark.conf.get("spark.sql.session.timeZone")
    assert before is not None
    spark.conf.set("spark.sql.session.timeZone", "Asia/Kolkata")
    yield
    spark.conf.set("spark.sql.session.timeZone", before)


def _records(spark: SparkSession) -> DataFrame:
    order = (7, "ann", ("Oslo", "0150"), 9.5, "4111", True)
    return spark.createDataFrame(
        [
            (None, order, "orders-eu", [("trace", b"t1")], STAMP, 0, 41),
            ("k", None, "orders-us", None, STAMP, 1, 42),
        ],
        SCHEMA,
    )


def _config(*transforms: tuple[str, dict[str, str]]) -> dict[str, str]:
    config = {"transforms": ",".join(alias for alias, _ in transforms)}
    for alias, settings in transforms:
        config.update({f"transforms.{alias}.{k}": v for k, v in settings.items()})
    return config


def _run(frame: DataFrame, config: dict[str, str], names: Names | None = None) -> list[Row]:
    return apply(chain(config), frame, names or Names()).collect()


def _plain(value: Any) -> Any:
    return value.asDict(recursive=True) if isinstance(value, Row) else value


def test_field_transforms_on_the_value_pass_tombstones_through(spark: SparkSession) -> None:
    names = Names({"value": "shop.Order"})
    config = _config(
        (
            "insert",
            {
                "type": "org.apache.kafka.connect.transforms.InsertField$Value",
                "topic.field": "src_topic",
                "offset.field": "src_offset!",
                "static.field": "origin",
                "static.value": "eu-west",
            },
        ),
        (
            "replace",
            {
                "type": "org.apache.kafka.connect.transforms.ReplaceField$Value",
                "exclude": "paid",
                "renames": "name:customer",
            },
        ),
        ("mask", {"type": "MaskField$Value", "fields": "card,price"}),
        ("mask2", {"type": "MaskField$Value", "fields": "customer", "replacement": "***"}),
        ("cast", {"type": "Cast$Value", "spec": "id:string,src_offset:int32"}),
        ("flat", {"type": "Flatten$Value", "delimiter": "_"}),
        ("meta", {"type": "SetSchemaMetadata$Value", "schema.version": "3"}),
    )
    first, tombstone = _run(_records(spark), config, names)
    assert _plain(first.value) == {
        "id": "7",
        "customer": "***",
        "address_city": "Oslo",
        "address_zip": "0150",
        "price": 0.0,
        "card": "",
        "src_topic": "orders-eu",
        "src_offset": 41,
        "origin": "eu-west",
    }
    assert tombstone.value is None
    assert (names.names, names.versions) == ({"value": "shop.Order"}, {"value": 3})


@pytest.mark.usefixtures("far_session_zone")
def test_record_transforms_keys_topics_headers_and_filters(spark: SparkSession) -> None:
    names = Names({"key": "shop.Key"})
    config = _config(
        ("tokey", {"type": "org.apache.kafka.connect.transforms.ValueToKey", "fields": "id,name"}),
        ("id", {"type": "ExtractField$Key", "field": "id"}),
        ("route", {"type": "RegexRouter", "regex": "orders-(.*)", "replacement": "$1.orders"}),
        ("daily", {"type": "TimestampRouter", "topic.format": "${topic}_${timestamp}"}),
        (
            "from",
            {"type": "HeaderFrom$Value", "fields": "name,id", "headers": "who,n"}
            | {"operation": "move"},
        ),
        ("add", {"type": "InsertHeader", "header": "app", "value.literal": "shop"}),
        ("drop", {"type": "DropHeaders", "headers": "trace"}),
        ("hoist", {"type": "HoistField$Value", "field": "order"}),
    )
    first, tombstone = _run(_records(spark), config, names)
    assert first.key == 7
    assert first.topic == "eu.orders_20240304"
    assert [(h.key, bytes(h.value)) for h in first.headers] == [
        ("who", b"ann"),
        ("n", b"7"),
        ("app", b"shop"),
    ]
    assert list(first.value.order.asDict()) == ["address", "price", "card", "paid"]
    # a tombstone has no value to take a key or headers from: its key becomes null
    assert (tombstone.key, tombstone.topic, tombstone.value.order) == (
        None,
        "us.orders_20240304",
        None,
    )
    assert names.names == {}


def test_predicates_choose_the_records_a_transform_applies_to(spark: SparkSession) -> None:
    predicates = {
        "predicates": "isEu,tombstone,traced",
        "predicates.isEu.type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
        "predicates.isEu.pattern": "orders-e.",
        "predicates.tombstone.type": "RecordIsTombstone",
        "predicates.traced.type": "HasHeaderKey",
        "predicates.traced.name": "trace",
    }
    route = {"type": "RegexRouter", "regex": ".*", "replacement": "eu", "predicate": "isEu"}
    mark = {"type": "InsertHeader", "header": "x", "value.literal": "1", "predicate": "traced"}
    keep = {"type": "Filter", "predicate": "tombstone", "negate": "true"}
    routed = _run(_records(spark), _config(("eu", route), ("mark", mark)) | predicates)
    assert [r.topic for r in routed] == ["eu", "orders-us"]
    assert [[h.key for h in r.headers or []] for r in routed] == [["trace", "x"], []]
    # Filter drops where its predicate holds: negated, every record but tombstones is dropped
    kept = _run(_records(spark), _config(("keep", keep)) | predicates)
    assert [(r.topic, r.value) for r in kept] == [("orders-us", None)]
    hoist = {"type": "HoistField$Value", "field": "f", "predicate": "tombstone"}
    with pytest.raises(ValueError, match="under a predicate"):
        _run(_records(spark), _config(("h", hoist)) | predicates)


@pytest.mark.usefixtures("far_session_zone")
def test_timestamp_converter_between_strings_unix_dates_and_timestamps(
    spark: SparkSession,
) -> None:
    frame = spark.createDataFrame(
        [(None, ("2024-03-04 23:30:05", 1709595005000, STAMP, STAMP), "t", None, STAMP)],
        "key string, value struct<text:string, millis:long, at:timestamp, day:timestamp>,"
        " topic string, headers array<struct<key:string, value:binary>>, timestamp timestamp",
    )
    fmt = "yyyy-MM-dd HH:mm:ss"
    config = _config(
        (
            "a",
            {"type": "TimestampConverter$Value", "field": "text", "format": fmt}
            | {"target.type": "unix", "unix.precision": "seconds"},
        ),
        ("b", {"type": "TimestampConverter$Value", "field": "millis", "target.type": "Timestamp"}),
        (
            "c",
            {"type": "TimestampConverter$Value", "field": "at", "target.type": "string"}
            | {"format": "yyyyMMdd'T'HHmmss"},
        ),
        ("d", {"type": "TimestampConverter$Value", "field": "day", "target.type": "Date"}),
    )
    (row,) = _run(frame, config)
    assert row.value.text == 1709595005
    assert row.value.millis.astimezone(UTC) == STAMP
    assert row.value.at == "20240304T233005"
    assert row.value.day == date(2024, 3, 4)


def test_transforms_refuse_what_kafka_refuses(spark: SparkSession) -> None:
    frame = _records(spark)
    with pytest.raises(ValueError, match=r"Only Struct objects supported for \[field insertion\]"):
        _run(frame, _config(("i", {"type": "InsertField$Key", "static.field": "s"})))
    with pytest.raises(ValueError, match="Unknown field: nope"):
        _run(frame, _config(("e", {"type": "ExtractField$Value", "field": "nope"})))


def test_a_transform_chain_through_a_worker(
    spark: SparkSession, broker: StromServer, tmp_path: Path
) -> None:
    """A FileStreamSource whose lines are hoisted into structs, stamped, keyed, given a header
    and routed to another topic; a FileStreamSink that filters out records by a header."""
    clean = create_topic(broker.bootstrap, "connect-clean")
    produce(broker.bootstrap, clean, [Record(b"dropped", headers=(("skip", b"1"),))])
    source, sink = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("one\ntwo\n")
    transforms = {
        "transforms": "hoist,stamp,key,via,route",
        "transforms.hoist.type": "org.apache.kafka.connect.transforms.HoistField$Value",
        "transforms.hoist.field": "line",
        "transforms.stamp.type": "org.apache.kafka.connect.transforms.InsertField$Value",
        "transforms.stamp.static.field": "origin",
        "transforms.stamp.static.value": "file",
        "transforms.key.type": "org.apache.kafka.connect.transforms.ValueToKey",
        "transforms.key.fields": "line",
        "transforms.via.type": "org.apache.kafka.connect.transforms.InsertHeader",
        "transforms.via.header": "via",
        "transforms.via.value.literal": "strom",
        "transforms.route.type": "org.apache.kafka.connect.transforms.RegexRouter",
        "transforms.route.regex": "unrouted-.*",
        "transforms.route.replacement": clean,
    }
    with (
        Connect(broker.bootstrap, spark=lambda: spark) as worker,
        httpx.Client(base_url=worker.url, timeout=60) as api,
    ):
        create(
            api,
            "lines-transformed",
            {
                "connector.class": "FileStreamSource",
                "file": str(source),
                "topic": "unrouted-lines",
                "key.converter": "org.apache.kafka.connect.storage.StringConverter",
                "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                "value.converter.schemas.enable": "false",
                **transforms,
            },
        )
        create(
            api,
            "lines-filtered",
            {
                "connector.class": "FileStreamSink",
                "topics": clean,
                "file": str(sink),
                "value.converter": "org.apache.kafka.connect.storage.StringConverter",
                "transforms": "skip",
                "transforms.skip.type": "Filter",
                "transforms.skip.predicate": "skipped",
                "predicates": "skipped",
                "predicates.skipped.type": "HasHeaderKey",
                "predicates.skipped.name": "skip",
            },
        )
        eventually(lambda: sink.exists() and len(sink.read_text().splitlines()) == 2, "lines")
        assert [json.loads(line) for line in sink.read_text().splitlines()] == [
            {"line": "one", "origin": "file"},
            {"line": "two", "origin": "file"},
        ]
        records = consume_all(broker.bootstrap, clean)[1:]
        assert [(r.key, r.headers) for r in records] == [
            (b"Struct{line=one}", (("via", b"strom"),)),
            (b"Struct{line=two}", (("via", b"strom"),)),
        ]
        assert states(api, "lines-transformed") == ("RUNNING", ["RUNNING"])
        bad = {"connector.class": "FileStreamSink", "topics": clean, "transforms": "x"}
        answer = api.put("/connector-plugins/FileStreamSink/config/validate", json=bad).json()
        assert 'Missing required configuration "transforms.x.type"' in str(answer)
