"""The schema registry's converters on a strom Connect worker, with a real registry and a real
PostgreSQL (the suite's ``postgres``): the JDBC source writes Confluent's Avro that
confluent-kafka's ``AvroDeserializer`` reads back with the values and the schema Confluent's
AvroConverter would register, and the JDBC sink writes the rows of records made by
confluent-kafka's ``AvroSerializer`` and ``JSONSerializer`` (and FileStreamSink the Avro
values as their JSON). One worker and one registry serve every case."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from confluent_kafka.cimpl import NewTopic
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pool, message_factory
from pyspark.sql import SparkSession
from strom_harness import StromServer

from e2e.spark.clients import Record, admin, consume_all, create_topic, produce, unique_topic
from e2e.spark.connect_api import create, eventually
from strom.registry.protobuf_schema import file_set
from strom.testing.connect import Connect
from strom.testing.postgres import Postgres
from strom.testing.registry import Registry

AVRO = "io.confluent.connect.avro.AvroConverter"
JSON_SCHEMA = "io.confluent.connect.json.JsonSchemaConverter"
PROTOBUF = "io.confluent.connect.protobuf.ProtobufConverter"


@pytest.fixture(scope="module")
def registry(broker: StromServer) -> Iterator[Registry]:
    with Registry(broker.bootstrap) as running:
        yield running


@pytest.fixture(scope="module")
def api(spark: SparkSession, broker: StromServer) -> Iterator[httpx.Client]:
    with (
        Connect(broker.bootstrap, spark=lambda: spark) as worker,
        httpx.Client(base_url=worker.url, timeout=60) as client,
    ):
        yield client


@pytest.fixture
def db(postgres: Postgres) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(postgres.conninfo, autocommit=True) as connection:
        yield connection


def _rows(db: psycopg.Connection[Any], query: str, count: int) -> Callable[[], list[Any] | None]:
    def check() -> list[Any] | None:
        try:
            rows = db.execute(query).fetchall()
        except (psycopg.errors.UndefinedTable, psycopg.errors.UndefinedColumn):
            return None
        return rows if len(rows) == count else None

    return check


def test_jdbc_source_writes_avro_that_confluents_deserializer_reads(
    api: httpx.Client,
    broker: StromServer,
    registry: Registry,
    postgres: Postgres,
    db: psycopg.Connection[Any],
) -> None:
    table = unique_topic("avro").replace("-", "_")
    topic = f"pg-{table}"
    client = admin(broker.bootstrap)  # kept until the result is in: a dropped client cancels it
    client.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)
    db.execute(
        f"CREATE TABLE {table} (id serial PRIMARY KEY, name text NOT NULL, amount numeric(10,2),"
        " placed timestamp, day date, small smallint)"
    )
    db.execute(
        f"INSERT INTO {table} (name, amount, placed, day, small) VALUES"
        " ('a', -12.5, '2024-01-02 03:04:05.123', '2024-01-02', 7), ('b', NULL, NULL, NULL, NULL)"
    )
    create(
        api,
        "avro-in",
        {
            "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
            "connection.url": postgres.url,
            "connection.user": "postgres",
            "table.whitelist": table,
            "mode": "incrementing",
            "incrementing.column.name": "id",
            "topic.prefix": "pg-",
            "poll.interval.ms": "300",
            "value.converter": AVRO,
            "value.converter.schema.registry.url": registry.url,
        },
    )
    deserialize = AvroDeserializer(SchemaRegistryClient({"url": registry.url}))
    context = SerializationContext(topic, MessageField.VALUE)

    def values() -> list[Any] | None:
        found = [deserialize(r.value, context) for r in consume_all(broker.bootstrap, topic)]
        return found if len(found) == 2 else None

    first, second = sorted(eventually(values, "two Avro records"), key=lambda v: v["id"])
    assert first == {
        "id": 1,
        "name": "a",
        "amount": Decimal("-12.50"),
        "placed": datetime(2024, 1, 2, 3, 4, 5, 123000, tzinfo=UTC),
        "day": date(2024, 1, 2),
        "small": 7,
    }
    assert second == {
        "id": 2,
        "name": "b",
        "amount": None,
        "placed": None,
        "day": None,
        "small": None,
    }
    latest = SchemaRegistryClient({"url": registry.url}).get_latest_version(f"{topic}-value")
    schema = str(latest.schema.schema_str)
    assert '"name":"' + table + '"' in schema and '"connect.type":"int16"' in schema
    assert '["null",{"type":"bytes","scale":2,"precision":10' in schema


def test_jdbc_source_writes_protobuf_that_confluents_deserializer_reads(
    api: httpx.Client,
    broker: StromServer,
    registry: Registry,
    postgres: Postgres,
    db: psycopg.Connection[Any],
) -> None:
    table = unique_topic("proto").replace("-", "_")
    topic = f"pg-{table}"
    client = admin(broker.bootstrap)  # kept until the result is in: a dropped client cancels it
    client.create_topics([NewTopic(topic, 1, 1)])[topic].result(15)
    db.execute(
        f"CREATE TABLE {table} (id serial PRIMARY KEY, name text NOT NULL, amount numeric(10,2),"
        " placed timestamp, day date, small smallint, ratio double precision, ok boolean)"
    )
    db.execute(
        f"INSERT INTO {table} (name, amount, placed, day, small, ratio, ok) VALUES"
        " ('a', -12.5, '2024-01-02 03:04:05.123', '2024-01-02', 7, 0.25, true),"
        " ('b', NULL, NULL, NULL, NULL, NULL, NULL)"
    )
    create(
        api,
        "proto-in",
        {
            "connector.class": "io.confluent.connect.jdbc.JdbcSourceConnector",
            "connection.url": postgres.url,
            "connection.user": "postgres",
            "table.whitelist": table,
            "mode": "incrementing",
            "incrementing.column.name": "id",
            "topic.prefix": "pg-",
            "poll.interval.ms": "300",
            "value.converter": PROTOBUF,
            "value.converter.schema.registry.url": registry.url,
            "value.converter.optional.for.nullables": "true",
        },
    )

    def two() -> list[Record] | None:
        found = consume_all(broker.bootstrap, topic)
        return found if len(found) == 2 else None

    records = eventually(two, "two Protobuf records")
    latest = SchemaRegistryClient({"url": registry.url}).get_latest_version(f"{topic}-value")
    text = str(latest.schema.schema_str)
    decimal = 'params { key: "precision" value: "10" } params { key: "scale" value: "2" }'
    int16 = 'params { key: "connect.type" value: "int16" }'
    for line in (
        f"message {table} {{",
        "int32 id = 1;",
        "string name = 2;",  # NOT NULL: not optional
        f".confluent.type.Decimal amount = 3 [(confluent.field_meta) = {{ {decimal} }}];",
        ".google.protobuf.Timestamp placed = 4;",  # a message has presence: never optional
        ".google.type.Date day = 5;",
        f"optional int32 small = 6 [(confluent.field_meta) = {{ {int16} }}];",
        "optional double ratio = 7;",
        "optional bool ok = 8;",
    ):
        assert line in text, (line, text)
    pool = descriptor_pool.DescriptorPool()
    for file in file_set(text).file:
        pool.Add(file)
    message = message_factory.GetMessageClass(pool.FindMessageTypeByName(table))
    deserialize = ProtobufDeserializer(message, {"use.deprecated.format": False})
    context = SerializationContext(topic, MessageField.VALUE)
    first, second = sorted((deserialize(r.value, context) for r in records), key=lambda m: m.id)
    header = b"\0" + int(latest.schema_id or 0).to_bytes(4, "big") + b"\0"  # index [0]: one 0
    assert all(r.value is not None and r.value[:6] == header for r in records)
    assert (first.id, first.name, first.small, first.ratio, first.ok) == (1, "a", 7, 0.25, True)
    assert (first.amount.value, first.amount.scale) == ((-1250).to_bytes(2, "big", signed=True), 2)
    assert (first.day.year, first.day.month, first.day.day) == (2024, 1, 2)
    assert first.placed.ToMilliseconds() == 1704164645123
    assert (second.id, second.name) == (2, "b")
    for field in ("amount", "placed", "day", "small", "ratio", "ok"):
        assert not second.HasField(field), field


def test_sinks_write_rows_of_confluents_avro_and_json_schema_records(
    tmp_path: Path,
    api: httpx.Client,
    broker: StromServer,
    registry: Registry,
    postgres: Postgres,
    db: psycopg.Connection[Any],
) -> None:
    client = SchemaRegistryClient({"url": registry.url})
    avro_schema = (
        '{"type":"record","name":"Order","fields":[{"name":"id","type":"int"},'
        '{"name":"name","type":["null","string"],"default":null},'
        '{"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":8,'
        '"scale":2}},{"name":"day","type":{"type":"int","logicalType":"date"}}]}'
    )
    json_schema = (
        '{"type":"object","title":"Order","properties":{"id":{"type":"integer"},'
        '"name":{"oneOf":[{"type":"null"},{"type":"string"}]}},"required":["id"]}'
    )
    cases = {
        "avro": (AVRO, AvroSerializer(client, avro_schema)),
        "json": (JSON_SCHEMA, JSONSerializer(json_schema, client)),
    }
    rows = {
        "avro": [
            {"id": 1, "name": "a", "amount": Decimal("1.50"), "day": date(2024, 1, 2)},
            {"id": 2, "name": None, "amount": Decimal("-3.00"), "day": date(1970, 1, 1)},
        ],
        "json": [{"id": 1, "name": "a"}, {"id": 2, "name": None}],
    }
    tables, topics = {}, {}
    for kind, (converter, serializer) in cases.items():
        topic = topics[kind] = create_topic(broker.bootstrap, f"sr-{kind}")
        context = SerializationContext(topic, MessageField.VALUE)
        produce(broker.bootstrap, topic, [Record(serializer(r, context)) for r in rows[kind]])
        tables[kind] = f"sink_{topic}".replace("-", "_")
        create(
            api,
            f"sink-{kind}",
            {
                "connector.class": "io.confluent.connect.jdbc.JdbcSinkConnector",
                "connection.url": postgres.url,
                "connection.user": "postgres",
                "topics": topic,
                "table.name.format": tables[kind],
                "auto.create": "true",
                "value.converter": converter,
                "value.converter.schema.registry.url": registry.url,
            },
        )
    lines = tmp_path / "avro.txt"
    create(
        api,
        "file-avro",
        {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
            "file": str(lines),
            "topics": topics["avro"],
            "value.converter": AVRO,
            "value.converter.schema.registry.url": registry.url,
        },
    )
    query = f'SELECT id, name, amount, day FROM "{tables["avro"]}" ORDER BY id'
    assert eventually(_rows(db, query, 2), "the Avro rows") == [
        (1, "a", Decimal("1.50"), date(2024, 1, 2)),
        (2, None, Decimal("-3.00"), date(1970, 1, 1)),
    ]
    query = f'SELECT id, name FROM "{tables["json"]}" ORDER BY id'
    assert eventually(_rows(db, query, 2), "the JSON Schema rows") == [(1, "a"), (2, None)]

    def written() -> list[Any] | None:
        found = lines.read_text().splitlines() if lines.exists() else []
        return [json.loads(line) for line in found] if len(found) == 2 else None

    first, second = eventually(written, "the file sink's two lines")
    assert (first["id"], first["name"], first["day"]) == (1, "a", 19724)
    assert (second["id"], second["name"], second["day"]) == (2, None, 0)
