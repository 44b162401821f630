"""The registry formats of strom's SQL on a real `strom server` and a real `strom registry`:
JSON_SR records written by confluent-kafka's JSONSerializer read by a stream whose columns
are inferred from the registry, a CREATE STREAM AS SELECT and an INSERT VALUES written in
JSON_SR and read back by confluent-kafka's JSONDeserializer, the sink's schema registered as
ksqlDB generates it; ksqlDB's errors for a server without a registry, a subject that does not
exist and a sink subject whose schema is incompatible; the records' JSON as Connect's JSON
Schema converter writes it (TIMESTAMPs as epoch milliseconds, DATEs as days, BYTES base64).
AVRO likewise: AvroSerializer's records read by an inferred stream, a CSAS into an AVRO sink
(ksqlDB's KsqlDataSourceSchema registered) read by AvroDeserializer, and every type encoded in
the JVM read back by fastavro and by the decoder. PROTOBUF likewise with ProtobufSerializer and
ProtobufDeserializer (ksqlDB's ConnectDefault1 registered for the sink); records of another
schema id and unreadable ones are skipped, not read as NULL rows (ksqlDB's processing log)."""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import httpx
import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.confluent.type import decimal_utils
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pool, message_factory
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from strom_harness import StromServer

from e2e.spark.clients import Record, consume_all, create_topic, produce, unique_topic
from e2e.spark.sql_api import eventually, ksql, sql_settings
from strom.registry.protobuf_schema import file_set
from strom.sql import types as ty
from strom.sql.analyzer import Column
from strom.sql.protobuf_schemas import protobuf_schema
from strom.sql.registry_schemas import avro_schema
from strom.sql.serde import decode, encode
from strom.sql.server import SqlServer
from strom.testing.registry import Registry

pytestmark = pytest.mark.timeout(300)  # a Spark query: slow when loaded
needs_javac = pytest.mark.skipif(
    shutil.which("javac") is None, reason="AVRO on Spark compiles strom's Java class with javac"
)

READING = {
    "type": "object",
    "properties": {
        "sensor": {"type": "string"},
        "reading": {"type": "number"},
        "count": {"type": "integer"},
    },
}


@pytest.fixture(scope="module")
def registry(broker: StromServer) -> Iterator[Registry]:
    with Registry(broker.bootstrap) as started:
        yield started


def _server(
    spark: SparkSession, broker: StromServer, state: Path, values: dict[str, str]
) -> SqlServer:
    settings = sql_settings(broker.bootstrap, unique_topic("sql-formats"), state, values)
    server = SqlServer(settings, spark=lambda: spark)
    server.start()
    return server


@pytest.fixture
def api(
    spark: SparkSession, broker: StromServer, registry: Registry, tmp_path: Path
) -> Iterator[httpx.Client]:
    server = _server(spark, broker, tmp_path / "state", {"ksql.schema.registry.url": registry.url})
    with httpx.Client(base_url=server.url, timeout=60) as client:
        yield client
    server.stop()


def _error(api: httpx.Client, text: str) -> str:
    answer = api.post("/ksql", json={"ksql": text, "streamsProperties": {}})
    assert answer.status_code == 400, answer.text
    body: dict[str, Any] = answer.json()
    assert body["@type"] == "statement_error"
    return str(body["message"])


def test_json_sr_in_and_out(api: httpx.Client, broker: StromServer, registry: Registry) -> None:
    topic = create_topic(broker.bootstrap, "sql-readings")
    client = SchemaRegistryClient({"url": registry.url})
    serializer = JSONSerializer(json.dumps(READING), client)
    context = SerializationContext(topic, MessageField.VALUE)
    produce(
        broker.bootstrap,
        topic,
        [
            Record(serializer({"sensor": s, "reading": r, "count": n}, context))
            for s, r, n in (("t1", 1.5, 1), ("t2", 0.5, 2), ("t3", 4.0, 3))
        ],
    )
    ksql(api, f"CREATE STREAM readings WITH (KAFKA_TOPIC='{topic}', VALUE_FORMAT='JSON_SR');")
    described = ksql(api, "DESCRIBE readings;")[0]["sourceDescription"]
    assert [(f["name"], f["schema"]["type"]) for f in described["fields"]] == [
        ("SENSOR", "STRING"),
        ("READING", "DOUBLE"),
        ("COUNT", "BIGINT"),
    ]
    sink = unique_topic("sql-hot")
    ksql(
        api,
        f"CREATE STREAM hot WITH (KAFKA_TOPIC='{sink}') AS SELECT sensor, reading * 2 AS twice, "
        "count FROM readings WHERE reading > 1 EMIT CHANGES;",
        **{"ksql.streams.auto.offset.reset": "earliest"},
    )
    ksql(api, "INSERT INTO readings (sensor, reading, count) VALUES ('t9', 9.0, 9);")

    registered = json.loads(client.get_latest_version(f"{sink}-value").schema.schema_str or "")
    assert list(registered["properties"]) == ["SENSOR", "TWICE", "COUNT"]
    assert registered["properties"]["TWICE"]["oneOf"] == [
        {"type": "null"},
        {"type": "number", "connect.type": "float64"},
    ]
    deserializer = JSONDeserializer(None, schema_registry_client=client)
    sink_context = SerializationContext(sink, MessageField.VALUE)

    def rows() -> list[Any]:
        records = consume_all(broker.bootstrap, sink)
        return sorted(
            (v["SENSOR"], v["TWICE"], v["COUNT"])
            for v in (deserializer(r.value, sink_context) for r in records)
        )

    expected = [("t1", 3.0, 1), ("t3", 8.0, 3), ("t9", 18.0, 9)]
    assert eventually(lambda: rows() == expected and expected, "the JSON_SR sink's rows")


AVRO_READING = {
    "type": "record",
    "name": "Reading",
    "fields": [
        {"name": "sensor", "type": "string"},
        {"name": "reading", "type": "double"},
        {"name": "count", "type": ["null", "long"], "default": None},
    ],
}


@needs_javac
def test_avro_in_and_out(api: httpx.Client, broker: StromServer, registry: Registry) -> None:
    topic = create_topic(broker.bootstrap, "sql-avro-readings")
    client = SchemaRegistryClient({"url": registry.url})
    serializer = AvroSerializer(client, json.dumps(AVRO_READING))
    context = SerializationContext(topic, MessageField.VALUE)
    produce(
        broker.bootstrap,
        topic,
        [
            Record(serializer({"sensor": s, "reading": r, "count": n}, context))
            for s, r, n in (("t1", 1.5, 1), ("t2", 0.5, 2), ("t3", 4.0, None))
        ],
    )
    ksql(api, f"CREATE STREAM avro_in WITH (KAFKA_TOPIC='{topic}', VALUE_FORMAT='AVRO');")
    described = ksql(api, "DESCRIBE avro_in;")[0]["sourceDescription"]
    assert [(f["name"], f["schema"]["type"]) for f in described["fields"]] == [
        ("SENSOR", "STRING"),
        ("READING", "DOUBLE"),
        ("COUNT", "BIGINT"),
    ]
    sink = unique_topic("sql-avro-hot")
    ksql(
        api,
        f"CREATE STREAM avro_hot WITH (KAFKA_TOPIC='{sink}') AS SELECT sensor, "
        "reading * 2 AS twice, count FROM avro_in WHERE reading > 1 EMIT CHANGES;",
        **{"ksql.streams.auto.offset.reset": "earliest"},
    )
    ksql(api, "INSERT INTO avro_in (sensor, reading, count) VALUES ('t9', 9.0, 9);")

    registered = json.loads(client.get_latest_version(f"{sink}-value").schema.schema_str or "")
    assert (registered["name"], registered["namespace"]) == (
        "KsqlDataSourceSchema",
        "io.confluent.ksql.avro_schemas",
    )
    assert registered["fields"][1] == {"name": "TWICE", "type": ["null", "double"], "default": None}
    deserializer = AvroDeserializer(client)
    sink_context = SerializationContext(sink, MessageField.VALUE)

    def rows() -> list[Any]:
        records = consume_all(broker.bootstrap, sink)
        return sorted(
            (v["SENSOR"], v["TWICE"], v["COUNT"])
            for v in (deserializer(r.value, sink_context) for r in records)
        )

    expected = [("t1", 3.0, 1), ("t3", 8.0, None), ("t9", 18.0, 9)]
    assert eventually(lambda: rows() == expected and expected, "the AVRO sink's rows")
    missing = _error(
        api, "CREATE STREAM nothing WITH (KAFKA_TOPIC='no-such-avro', VALUE_FORMAT='AVRO');"
    )
    assert missing.startswith("Schema for message values on topic 'no-such-avro' does not exist")
    unknown_id = _error(
        api,
        f"CREATE STREAM bad_id (x INT) WITH (KAFKA_TOPIC='{topic}', VALUE_FORMAT='AVRO', "
        "VALUE_SCHEMA_ID=99999);",
    )
    assert unknown_id == "Schema with id 99999 does not exist in the Schema Registry."


def test_json_sr_errors(
    api: httpx.Client,
    spark: SparkSession,
    broker: StromServer,
    registry: Registry,
    tmp_path: Path,
) -> None:
    topic = create_topic(broker.bootstrap, "sql-unregistered")
    missing = _error(
        api, f"CREATE STREAM nothing WITH (KAFKA_TOPIC='{topic}', VALUE_FORMAT='JSON_SR');"
    )
    assert missing.startswith(
        f"Schema for message values on topic '{topic}' does not exist in the Schema Registry."
    )
    assert f"Subject: {topic}-value" in missing

    taken = create_topic(broker.bootstrap, "sql-taken")
    client = SchemaRegistryClient({"url": registry.url})
    client.register_schema(f"{taken}-value", Schema('"string"', "AVRO"))
    other_type = _error(
        api,
        f"CREATE STREAM taken (name STRING) WITH (KAFKA_TOPIC='{taken}', VALUE_FORMAT='JSON_SR');",
    )
    assert other_type.startswith("Format JSON_SR expects a JSON schema, but the schema of ")
    ksql(
        api,
        f"CREATE STREAM names (name STRING) WITH (KAFKA_TOPIC='{topic}', VALUE_FORMAT='JSON_SR');",
    )
    refused = _error(
        api, f"CREATE STREAM copy WITH (KAFKA_TOPIC='{taken}') AS SELECT * FROM names;"
    )
    assert refused.startswith("Could not register schema for topic:"), refused
    assert f"Subject: {taken}-value" in refused

    reading_id = client.register_schema("sql-reading-schema", Schema(json.dumps(READING), "JSON"))
    ksql(
        api,
        f"CREATE STREAM by_id WITH (KAFKA_TOPIC='{topic}', VALUE_FORMAT='JSON_SR', "
        f"VALUE_SCHEMA_ID={reading_id});",
    )
    described = ksql(api, "DESCRIBE by_id;")[0]["sourceDescription"]
    assert [f["name"] for f in described["fields"]] == ["SENSOR", "READING", "COUNT"]
    unknown = _error(
        api,
        f"CREATE STREAM no_id WITH (KAFKA_TOPIC='{topic}', VALUE_FORMAT='JSON_SR', "
        "VALUE_SCHEMA_ID=99999);",
    )
    assert unknown == "Schema with id 99999 does not exist in the Schema Registry."

    bare = _server(spark, broker, tmp_path / "bare", {})
    try:
        with httpx.Client(base_url=bare.url, timeout=60) as plain:
            unset = _error(
                plain,
                f"CREATE STREAM s (name STRING) WITH (KAFKA_TOPIC='{topic}', "
                "VALUE_FORMAT='JSON_SR');",
            )
    finally:
        bare.stop()
    assert unset == (
        f"Schema registry fetch for topic {topic} request failed.\nCaused by: KSQL is not "
        "configured to use a schema registry. To enable it, please set ksql.schema.registry.url"
    )


def test_json_sr_records_as_connect_writes_them(spark: SparkSession) -> None:
    columns = [
        Column("S", ty.STRING),
        Column("T", ty.TIMESTAMP),
        Column("D", ty.DATE),
        Column("B", ty.BYTES),
        Column("DEC", ty.DecimalType(5, 2)),
    ]
    row = spark.sql(
        "SELECT 'x' AS S, timestamp_millis(1700000000123) AS T, date_from_unix_date(19000) AS D, "
        "CAST('hi' AS BINARY) AS B, CAST(1.25 AS DECIMAL(5, 2)) AS DEC"
    )
    encoded = row.select(encode(columns, "JSON_SR", 7).alias("v"))
    value = bytes(encoded.collect()[0].v)
    assert value[:5] == b"\x00\x00\x00\x00\x07"
    assert json.loads(value[5:]) == {
        "S": "x",
        "T": 1700000000123,
        "D": 19000,
        "B": "aGk=",
        "DEC": 1.25,
    }
    decoded = encoded.select(*decode(F.col("v"), columns, "JSON_SR")).collect()[0]
    assert tuple(decoded) == tuple(row.collect()[0])


@needs_javac
def test_avro_records_as_ksqldb_writes_them(spark: SparkSession) -> None:
    columns = [
        Column("S", ty.STRING),
        Column("T", ty.TIMESTAMP),
        Column("D", ty.DATE),
        Column("B", ty.BYTES),
        Column("DEC", ty.DecimalType(5, 2)),
        Column("A", ty.ArrayType(ty.BIGINT)),
        Column("M", ty.MapType(ty.STRING, ty.DOUBLE)),
        Column("ST", ty.StructType((ty.StructField("X", ty.INT),))),
        Column("N", ty.INT),
    ]
    row = spark.sql(
        "SELECT 'x' AS S, timestamp_millis(1700000000123) AS T, date_from_unix_date(19000) AS D, "
        "CAST('hi' AS BINARY) AS B, CAST(1.25 AS DECIMAL(5, 2)) AS DEC, array(1L, 2L) AS A, "
        "map('k', 0.5D) AS M, named_struct('X', 3) AS ST, CAST(NULL AS INT) AS N"
    )
    schema = avro_schema(columns)
    encoded = row.select(encode(columns, "AVRO", 7, schema).alias("v"))
    value = bytes(encoded.collect()[0].v)
    assert value[:5] == b"\x00\x00\x00\x00\x07"
    read = fastavro.schemaless_reader(
        io.BytesIO(value[5:]), fastavro.parse_schema(json.loads(schema)), None
    )
    assert read == {
        "S": "x",
        "T": datetime.fromtimestamp(1700000000.123, UTC),
        "D": date(1970, 1, 1) + timedelta(days=19000),
        "B": b"hi",
        "DEC": Decimal("1.25"),
        "A": [1, 2],
        "M": {"k": 0.5},
        "ST": {"X": 3},
        "N": None,
    }
    decoded = encoded.select(*decode(F.col("v"), columns, "AVRO", schema, 7)).collect()[0]
    assert tuple(decoded) == tuple(row.collect()[0])
    garbage = spark.createDataFrame([(b"\x00\x00\x00\x00\x07\xff",), (b"plain",)], "v binary")
    unreadable = garbage.select(*decode(F.col("v"), columns, "AVRO", schema, 7)).collect()
    assert [tuple(r) for r in unreadable] == [(None,) * len(columns)] * 2


PROTO_READING = """
syntax = "proto3";
package sensors;
import "google/protobuf/timestamp.proto";

message Reading {
  string sensor = 1;
  double reading = 2;
  int64 count = 3;
  repeated string tags = 4;
  Place place = 5;
  google.protobuf.Timestamp at = 6;
}

message Place {
  string city = 1;
}
"""


def _message_class(text: str, name: str) -> Any:
    """The message `name` of a `.proto` text, as a class of a pool of its own."""
    pool = descriptor_pool.DescriptorPool()
    for file in file_set(text).file:  # its well-known imports, then the file
        pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(name))


@needs_javac
def test_protobuf_in_and_out(api: httpx.Client, broker: StromServer, registry: Registry) -> None:
    topic = create_topic(broker.bootstrap, "sql-proto-readings")
    client = SchemaRegistryClient({"url": registry.url})
    reading = _message_class(PROTO_READING, "sensors.Reading")
    serializer = ProtobufSerializer(reading, client, {"use.deprecated.format": False})
    context = SerializationContext(topic, MessageField.VALUE)
    good = [
        Record(
            serializer(
                reading(sensor=s, reading=r, count=n, tags=tags, place={"city": city}), context
            )
        )
        for s, r, n, tags, city in (("t1", 1.5, 1, ["a"], "Oslo"), ("t2", 0.5, 2, [], "Rome"))
    ]
    other_class = _message_class('syntax = "proto3"; message Other { string name = 1; }', "Other")
    other = ProtobufSerializer(other_class, client, {"use.deprecated.format": False})
    elsewhere = SerializationContext("sql-proto-other", MessageField.VALUE)
    other_id = other(other_class(name="elsewhere"), elsewhere)
    produce(broker.bootstrap, topic, [good[0], Record(b"not protobuf"), Record(other_id), good[1]])
    ksql(api, f"CREATE STREAM proto_in WITH (KAFKA_TOPIC='{topic}', VALUE_FORMAT='PROTOBUF');")
    described = ksql(api, "DESCRIBE proto_in;")[0]["sourceDescription"]
    assert [(f["name"], f["schema"]["type"]) for f in described["fields"]] == [
        ("SENSOR", "STRING"),
        ("READING", "DOUBLE"),
        ("COUNT", "BIGINT"),
        ("TAGS", "ARRAY"),
        ("PLACE", "STRUCT"),
        ("AT", "TIMESTAMP"),
    ]
    sink = unique_topic("sql-proto-out")
    ksql(
        api,
        f"CREATE STREAM proto_out WITH (KAFKA_TOPIC='{sink}') AS SELECT sensor, "
        "reading * 2 AS twice, count, place->`city` AS city, tags FROM proto_in EMIT CHANGES;",
        **{"ksql.streams.auto.offset.reset": "earliest"},
    )
    ksql(api, "INSERT INTO proto_in (sensor, reading, count) VALUES ('t9', 9.0, 9);")
    registered = client.get_latest_version(f"{sink}-value").schema
    assert registered.schema_type == "PROTOBUF"
    assert "message ConnectDefault1 {" in (registered.schema_str or "")
    out = _message_class(registered.schema_str or "", "ConnectDefault1")
    deserializer = ProtobufDeserializer(out, {"use.deprecated.format": False})
    sink_context = SerializationContext(sink, MessageField.VALUE)

    def rows() -> list[Any]:
        records = consume_all(broker.bootstrap, sink)
        return sorted(
            (m.SENSOR, m.TWICE, m.COUNT, m.CITY, list(m.TAGS))
            for m in (deserializer(r.value, sink_context) for r in records)
        )

    # the unreadable record and the one of another schema are skipped, not NULL rows
    expected = [
        ("t1", 3.0, 1, "Oslo", ["a"]),
        ("t2", 1.0, 2, "Rome", []),
        ("t9", 18.0, 9, "", []),  # INSERT VALUES: no place (proto3 reads an unset string as "")
    ]
    assert eventually(lambda: rows() == expected and expected, "the PROTOBUF sink's rows")

    unsupported = _error(
        api,
        f"CREATE STREAM nested (a ARRAY<ARRAY<INT>>) WITH (KAFKA_TOPIC='{unique_topic('m')}', "
        "VALUE_FORMAT='PROTOBUF', PARTITIONS=1);",
    )
    assert unsupported.startswith(
        "The 'PROTOBUF' format does not support type 'ARRAY<ARRAY<INTEGER>>'"
    )


@needs_javac
def test_protobuf_logical_types_in_and_out(
    api: httpx.Client, broker: StromServer, registry: Registry
) -> None:
    """DECIMAL, DATE and TIMESTAMP as Confluent's ProtobufData writes them (confluent.type.Decimal
    with its precision and scale in `confluent.field_meta`, google.type.Date,
    google.protobuf.Timestamp), read from ProtobufSerializer's records and written to a sink
    that ProtobufDeserializer and Confluent's decimal_utils read back."""
    topic = create_topic(broker.bootstrap, "sql-proto-money")
    client = SchemaRegistryClient({"url": registry.url})
    written = protobuf_schema(
        [
            Column("ID", ty.STRING),
            Column("AMOUNT", ty.DecimalType(6, 2)),
            Column("DAY", ty.DATE),
            Column("AT", ty.TIMESTAMP),
        ]
    )
    payment = _message_class(written, "ConnectDefault1")
    serializer = ProtobufSerializer(payment, client, {"use.deprecated.format": False})
    context = SerializationContext(topic, MessageField.VALUE)
    inputs = [
        ("p1", Decimal("12.34"), date(2024, 2, 29)),
        ("p2", Decimal("-0.05"), date(1969, 7, 20)),
    ]
    records = []
    for key, amount, day in inputs:
        message = payment(ID=key)  # Confluent's Decimal class is of another pool: its bytes
        message.AMOUNT.MergeFromString(decimal_utils.to_proto_decimal(amount).SerializeToString())
        message.DAY.year, message.DAY.month, message.DAY.day = day.year, day.month, day.day
        message.AT.FromMilliseconds(1_700_000_000_123)
        records.append(Record(serializer(message, context)))
    produce(broker.bootstrap, topic, records)
    ksql(api, f"CREATE STREAM money_in WITH (KAFKA_TOPIC='{topic}', VALUE_FORMAT='PROTOBUF');")
    described = ksql(api, "DESCRIBE money_in;")[0]["sourceDescription"]
    assert [(f["name"], f["schema"]["type"]) for f in described["fields"]] == [
        ("ID", "STRING"),
        ("AMOUNT", "DECIMAL"),
        ("DAY", "DATE"),
        ("AT", "TIMESTAMP"),
    ]
    sink = unique_topic("sql-proto-money-out")
    ksql(
        api,
        f"CREATE STREAM money_out WITH (KAFKA_TOPIC='{sink}') AS SELECT id, amount, "
        "amount * 2 AS twice, day, at FROM money_in EMIT CHANGES;",
        **{"ksql.streams.auto.offset.reset": "earliest"},
    )
    registered = client.get_latest_version(f"{sink}-value").schema.schema_str or ""
    assert "confluent.type.Decimal AMOUNT = 2" in registered, registered
    out = _message_class(registered, "ConnectDefault1")
    deserializer = ProtobufDeserializer(out, {"use.deprecated.format": False})
    sink_context = SerializationContext(sink, MessageField.VALUE)

    def rows() -> list[Any]:
        read = (deserializer(r.value, sink_context) for r in consume_all(broker.bootstrap, sink))
        return sorted(
            (
                m.ID,
                decimal_utils.from_proto_decimal(m.AMOUNT),
                decimal_utils.from_proto_decimal(m.TWICE),
                date(m.DAY.year, m.DAY.month, m.DAY.day),
                m.AT.ToMilliseconds(),
            )
            for m in read
        )

    expected = [(key, amount, amount * 2, day, 1_700_000_000_123) for key, amount, day in inputs]
    assert eventually(lambda: rows() == expected and expected, "the logical types' sink rows")


@contextmanager
def _processing_log(spark: SparkSession) -> Iterator[Callable[[], list[str]]]:
    """The lines Spark's JVM logs to ksqlDB's `processing` logger meanwhile (local mode: the
    executors are the driver's JVM), caught by a log4j2 appender added for the while."""
    jvm = spark._jvm
    assert jvm is not None
    context = jvm.org.apache.logging.log4j.LogManager.getContext(False)
    config = context.getConfiguration()
    layout = jvm.org.apache.logging.log4j.core.layout.PatternLayout.newBuilder()
    layout = layout.withPattern("%p %c: %m%n").build()
    writer = jvm.java.io.StringWriter()
    appender = jvm.org.apache.logging.log4j.core.appender.WriterAppender.createAppender(
        layout, None, writer, "strom-processing-test", False, True
    )
    appender.start()
    config.getRootLogger().addAppender(appender, None, None)
    context.updateLoggers()
    try:
        yield lambda: [
            line for line in str(writer.toString()).splitlines() if " processing: " in line
        ]
    finally:
        config.getRootLogger().removeAppender("strom-processing-test")
        context.updateLoggers()
        appender.stop()


@needs_javac
def test_protobuf_records_as_ksqldb_writes_them(spark: SparkSession) -> None:
    columns = [
        Column("S", ty.STRING),
        Column("T", ty.TIMESTAMP),
        Column("B", ty.BYTES),
        Column("A", ty.ArrayType(ty.BIGINT)),
        Column("M", ty.MapType(ty.STRING, ty.DOUBLE)),
        Column("ST", ty.StructType((ty.StructField("X", ty.INT),))),
        Column("N", ty.INT),
    ]
    row = spark.sql(
        "SELECT 'x' AS S, timestamp_millis(1700000000123) AS T, CAST('hi' AS BINARY) AS B, "
        "array(1L, 2L) AS A, map('k', 0.5D) AS M, named_struct('X', 3) AS ST, 7 AS N"
    )
    schema = protobuf_schema(columns)
    encoded = row.select(encode(columns, "PROTOBUF", 7, schema).alias("v"))
    value = bytes(encoded.collect()[0].v)
    assert value[:6] == b"\x00\x00\x00\x00\x07\x00"  # the id, then message index [0]
    message = _message_class(schema, "ConnectDefault1").FromString(value[6:])
    assert (message.S, message.T.ToMilliseconds(), message.B, list(message.A)) == (
        "x",
        1700000000123,
        b"hi",
        [1, 2],
    )
    assert (dict(message.M), message.ST.X, message.N) == ({"k": 0.5}, 3, 7)
    decoded = encoded.select(*decode(F.col("v"), columns, "PROTOBUF", schema, 7)).collect()[0]
    assert tuple(decoded) == tuple(row.collect()[0])
    garbage = spark.createDataFrame(
        [(b"\x00\x00\x00\x00\x07\x00\xff",), (b"plain",), (value[:4] + b"\x08" + value[5:],)],
        "v binary",
    )
    with _processing_log(spark) as log:
        unreadable = garbage.select(*decode(F.col("v"), columns, "PROTOBUF", schema, 7)).collect()
    assert [tuple(r) for r in unreadable] == [(None,) * len(columns)] * 3
    entries = [json.loads(line.split(" processing: ", 1)[1]) for line in log()]
    assert {e["deserializationError"]["cause"][0] for e in entries} >= {
        "Unknown magic byte!",
        "Expected schema id 7, got 8",
    }
    assert entries[0]["type"] == 0
    assert entries[0]["deserializationError"]["target"] == "value"


@needs_javac
def test_registry_keys(api: httpx.Client, broker: StromServer, registry: Registry) -> None:
    topic = create_topic(broker.bootstrap, "sql-avro-keyed")
    client = SchemaRegistryClient({"url": registry.url})
    keys = AvroSerializer(client, '"string"')
    values = AvroSerializer(client, json.dumps(AVRO_READING))
    key_context = SerializationContext(topic, MessageField.KEY)
    value_context = SerializationContext(topic, MessageField.VALUE)
    produce(
        broker.bootstrap,
        topic,
        [
            Record(
                values({"sensor": s, "reading": 1.0, "count": n}, value_context),
                key=keys(k, key_context),
            )
            for k, s, n in (("k1", "t1", 1), ("k2", "t2", 2), ("k3", "t1", 3))
        ]
        + [Record(values({"sensor": "t9", "reading": 0.0, "count": 0}, value_context), b"bad")],
    )
    ksql(
        api,
        f"CREATE STREAM keyed (id STRING KEY) WITH (KAFKA_TOPIC='{topic}', FORMAT='AVRO');",
    )
    copy = unique_topic("sql-avro-key-copy")
    counts = unique_topic("sql-proto-key-counts")
    earliest = {"ksql.streams.auto.offset.reset": "earliest"}
    ksql(
        api,
        f"CREATE STREAM keyed_copy WITH (KAFKA_TOPIC='{copy}') AS SELECT id, sensor FROM keyed;",
        **earliest,
    )
    ksql(
        api,
        f"CREATE TABLE sensor_counts WITH (KAFKA_TOPIC='{counts}', KEY_FORMAT='PROTOBUF') AS "
        "SELECT sensor, COUNT(*) AS n FROM keyed GROUP BY sensor EMIT CHANGES;",
        **earliest,
    )
    assert client.get_latest_version(f"{copy}-key").schema.schema_str == '"string"'
    copy_keys = AvroDeserializer(client)
    copy_context = SerializationContext(copy, MessageField.KEY)

    def copied() -> list[Any]:
        return sorted(copy_keys(r.key, copy_context) for r in consume_all(broker.bootstrap, copy))

    # the record whose key is not Avro of the key's schema is skipped
    assert eventually(lambda: copied() == ["k1", "k2", "k3"], "the AVRO keys of the copy")
    key_schema = client.get_latest_version(f"{counts}-key").schema
    assert key_schema.schema_type == "PROTOBUF"
    count_keys = ProtobufDeserializer(
        _message_class(key_schema.schema_str or "", "ConnectDefault1"),
        {"use.deprecated.format": False},
    )
    counts_context = SerializationContext(counts, MessageField.KEY)
    value_decoder = AvroDeserializer(client)
    counts_values = SerializationContext(counts, MessageField.VALUE)

    def latest() -> dict[str, int]:
        out = {}
        for r in consume_all(broker.bootstrap, counts):
            out[count_keys(r.key, counts_context).SENSOR] = value_decoder(r.value, counts_values)[
                "N"
            ]
        return out

    assert eventually(lambda: latest() == {"t1": 2, "t2": 1}, "the PROTOBUF keys of the counts")

    def pulled() -> list[Any]:  # the table's state, its keys decoded in Python
        sql = "SELECT * FROM sensor_counts WHERE sensor = 't1';"
        answer = api.post("/query-stream", json={"sql": sql})
        assert answer.status_code == 200, answer.text
        return [json.loads(line) for line in answer.text.splitlines()[1:]]

    assert eventually(lambda: pulled() == [["t1", 2]], "a pull query on the PROTOBUF-keyed table")


PROTO_TWO = """
syntax = "proto3";
package shop;

message Header { string region = 1; }
message Order { string id = 1; int64 qty = 2; }
"""


@needs_javac
def test_schema_full_names(api: httpx.Client, broker: StromServer, registry: Registry) -> None:
    """`VALUE_SCHEMA_FULL_NAME`: a PROTOBUF source reads the message it names (not the file's
    first; INSERT VALUES writes it), a PROTOBUF sink's message and package are the name, an
    AVRO sink's record name and namespace."""
    topic = create_topic(broker.bootstrap, "sql-proto-named")
    client = SchemaRegistryClient({"url": registry.url})
    order = _message_class(PROTO_TWO, "shop.Order")
    serializer = ProtobufSerializer(order, client, {"use.deprecated.format": False})
    context = SerializationContext(topic, MessageField.VALUE)
    produce(broker.bootstrap, topic, [Record(serializer(order(id="o1", qty=3), context))])
    ksql(
        api,
        f"CREATE STREAM orders_named WITH (KAFKA_TOPIC='{topic}', VALUE_FORMAT='PROTOBUF', "
        "VALUE_SCHEMA_FULL_NAME='shop.Order');"
        "INSERT INTO orders_named (id, qty) VALUES ('o2', 5);",
    )
    described = ksql(api, "DESCRIBE orders_named;")[0]["sourceDescription"]
    assert [f["name"] for f in described["fields"]] == ["ID", "QTY"]
    proto_sink, avro_sink = unique_topic("sql-proto-named-out"), unique_topic("sql-avro-named")
    earliest = {"ksql.streams.auto.offset.reset": "earliest"}
    ksql(
        api,
        f"CREATE STREAM big_named WITH (KAFKA_TOPIC='{proto_sink}', "
        "VALUE_SCHEMA_FULL_NAME='com.acme.BigOrder') AS SELECT id, qty * 10 AS qty10 "
        "FROM orders_named EMIT CHANGES;",
        **earliest,
    )
    ksql(
        api,
        f"CREATE STREAM avro_named WITH (KAFKA_TOPIC='{avro_sink}', VALUE_FORMAT='AVRO', "
        "VALUE_SCHEMA_FULL_NAME='com.acme.AvroOrder') AS SELECT id, qty FROM orders_named "
        "EMIT CHANGES;",
        **earliest,
    )
    registered = client.get_latest_version(f"{proto_sink}-value").schema.schema_str or ""
    assert "package com.acme;" in registered and "message BigOrder {" in registered, registered
    big = _message_class(registered, "com.acme.BigOrder")
    deserializer = ProtobufDeserializer(big, {"use.deprecated.format": False})
    sink_context = SerializationContext(proto_sink, MessageField.VALUE)

    def proto_rows() -> list[Any]:
        records = consume_all(broker.bootstrap, proto_sink)
        return sorted(
            (m.ID, m.QTY10) for m in (deserializer(r.value, sink_context) for r in records)
        )

    assert eventually(lambda: proto_rows() == [("o1", 30), ("o2", 50)], "the named PROTOBUF sink")
    avro = json.loads(client.get_latest_version(f"{avro_sink}-value").schema.schema_str or "")
    assert (avro["name"], avro["namespace"]) == ("AvroOrder", "com.acme")
    avro_reader = AvroDeserializer(client)
    avro_context = SerializationContext(avro_sink, MessageField.VALUE)

    def avro_rows() -> list[Any]:
        records = consume_all(broker.bootstrap, avro_sink)
        return sorted(
            (v["ID"], v["QTY"]) for v in (avro_reader(r.value, avro_context) for r in records)
        )

    assert eventually(lambda: avro_rows() == [("o1", 3), ("o2", 5)], "the named AVRO sink")


@needs_javac
def test_avro_records_of_an_evolved_schema(
    api: httpx.Client, broker: StromServer, registry: Registry
) -> None:
    """A producer that evolved its schema compatibly (a field added, one dropped that had a
    default) writes records with the new id: the stream declared with the old one reads them
    with their own schema resolved to its own (Avro's resolution, as ksqlDB); a record whose
    schema does not resolve is skipped (the processing log)."""
    topic = create_topic(broker.bootstrap, "sql-avro-evolved")
    client = SchemaRegistryClient({"url": registry.url})
    context = SerializationContext(topic, MessageField.VALUE)
    old = AvroSerializer(client, json.dumps(AVRO_READING))
    produce(broker.bootstrap, topic, [Record(old({"sensor": "t1", "reading": 1.5}, context))])
    ksql(api, f"CREATE STREAM evolving WITH (KAFKA_TOPIC='{topic}', VALUE_FORMAT='AVRO');")
    evolved = {
        "type": "record",
        "name": "Reading",
        "fields": [
            {"name": "sensor", "type": "string"},
            {"name": "unit", "type": "string", "default": "C"},
            {"name": "reading", "type": "double"},
        ],
    }
    new = AvroSerializer(client, json.dumps(evolved))
    other = AvroSerializer(
        client,
        json.dumps({"type": "record", "name": "Other", "fields": [{"name": "x", "type": "int"}]}),
    )
    elsewhere = SerializationContext(unique_topic("sql-avro-other"), MessageField.VALUE)
    produce(
        broker.bootstrap,
        topic,
        [
            Record(new({"sensor": "t2", "unit": "F", "reading": 2.5}, context)),
            Record(other({"x": 1}, elsewhere)),  # another subject's schema: does not resolve
            Record(new({"sensor": "t3", "unit": "K", "reading": 3.5}, context)),
        ],
    )
    assert client.get_latest_version(f"{topic}-value").version == 2  # the producer's evolution
    sink = unique_topic("sql-avro-evolved-out")
    ksql(
        api,
        f"CREATE STREAM evolved_out WITH (KAFKA_TOPIC='{sink}', VALUE_FORMAT='JSON') AS "
        "SELECT sensor, reading, count FROM evolving EMIT CHANGES;",
        **{"ksql.streams.auto.offset.reset": "earliest"},
    )

    def rows() -> list[Any]:
        records = consume_all(broker.bootstrap, sink)
        return sorted(tuple(json.loads(r.value).values()) for r in records if r.value)

    expected = [("t1", 1.5, None), ("t2", 2.5, None), ("t3", 3.5, None)]
    assert eventually(lambda: rows() == expected and expected, "every version's records")


@needs_javac
def test_the_processing_log_as_a_stream(
    spark: SparkSession, broker: StromServer, registry: Registry, tmp_path: Path
) -> None:
    """ksqlDB's `ksql.logging.processing.*.auto.create`: a record the query cannot
    deserialize is an entry in `<service.id>ksql_processing_log` (ksqlDB's JSON), which the
    stream KSQL_PROCESSING_LOG reads with ksqlDB's columns."""
    server = _server(
        spark,
        broker,
        tmp_path / "state",
        {
            "ksql.schema.registry.url": registry.url,
            "ksql.logging.processing.topic.auto.create": "true",
            "ksql.logging.processing.stream.auto.create": "true",
        },
    )
    try:
        with httpx.Client(base_url=server.url, timeout=60) as api:
            topic = create_topic(broker.bootstrap, "sql-avro-plog")
            client = SchemaRegistryClient({"url": registry.url})
            serializer = AvroSerializer(client, json.dumps(AVRO_READING))
            context = SerializationContext(topic, MessageField.VALUE)
            good = serializer({"sensor": "t1", "reading": 1.5}, context)
            produce(broker.bootstrap, topic, [Record(good), Record(b"not avro")])
            ksql(api, f"CREATE STREAM plog_in WITH (KAFKA_TOPIC='{topic}', VALUE_FORMAT='AVRO');")
            streams = {s["name"] for s in ksql(api, "SHOW STREAMS;")[0]["streams"]}
            assert "KSQL_PROCESSING_LOG" in streams
            ksql(
                api,
                f"CREATE STREAM plog_out WITH (KAFKA_TOPIC='{unique_topic('plog-out')}', "
                "VALUE_FORMAT='JSON') AS SELECT sensor FROM plog_in EMIT CHANGES;",
                **{"ksql.streams.auto.offset.reset": "earliest"},
            )
            logged = f"{server.settings.service_id}ksql_processing_log"

            def entries() -> list[Any]:
                return [json.loads(r.value or b"") for r in consume_all(broker.bootstrap, logged)]

            entry = eventually(entries, "an entry in the processing log topic")[0]
            assert entry["level"] == "ERROR" and isinstance(entry["time"], int)
            error = entry["message"]["deserializationError"]
            assert (error["target"], error["topic"], error["cause"]) == (
                "value",
                topic,
                ["Unknown magic byte!"],
            )
            with api.stream(
                "POST",
                "/query",
                json={
                    "ksql": "SELECT message->type AS kind, message->deserializationError->target"
                    " AS target, message->deserializationError->`TOPIC` AS t, "
                    "message->deserializationError->cause AS cause "
                    "FROM KSQL_PROCESSING_LOG EMIT CHANGES LIMIT 1;",
                    "streamsProperties": {"auto.offset.reset": "earliest"},
                },
            ) as pushed:
                rows = json.loads(pushed.read())
            assert rows[1]["row"]["columns"] == [0, "value", topic, ["Unknown magic byte!"]]
    finally:
        server.stop()
