"""SQL columns <-> JSON Schema (the JSON_SR format) and Avro (AVRO): the schema ksqlDB
registers for a sink, read back to the same columns; schemas written by other producers
(confluent-kafka's JSONSerializer, nullable type lists) read as ksqlDB infers them; and the
registry properties of a CREATE (inference, VALUE_SCHEMA_ID, an AVRO key's unwrapped schema)."""

from __future__ import annotations

import json

import fastavro
import pytest

from strom.sql import types as ty
from strom.sql.analyzer import Column
from strom.sql.errors import SqlSemanticError
from strom.sql.metastore import declared_source
from strom.sql.parser import parse_statement
from strom.sql.registry_schemas import (
    avro_columns,
    avro_key_schema,
    avro_schema,
    json_columns,
    json_schema,
)
from strom.sql.statements import CreateSource

EVERY_TYPE = (
    Column("B", ty.BOOLEAN),
    Column("I", ty.INT),
    Column("L", ty.BIGINT),
    Column("D", ty.DOUBLE),
    Column("S", ty.STRING),
    Column("BY", ty.BYTES),
    Column("DT", ty.DATE),
    Column("TM", ty.TIME),
    Column("TS", ty.TIMESTAMP),
    Column("DEC", ty.DecimalType(10, 2)),
    Column("A", ty.ArrayType(ty.STRING)),
    Column("M", ty.MapType(ty.STRING, ty.BIGINT)),
    Column("ST", ty.StructType((ty.StructField("x", ty.INT), ty.StructField("y", ty.STRING)))),
)


def test_every_type_reads_back_from_the_schema_ksqldb_registers() -> None:
    assert json_columns(json_schema(EVERY_TYPE)) == EVERY_TYPE


def test_the_registered_schema_is_connects_optional_fields_in_order() -> None:
    schema = json.loads(json_schema([Column("NAME", ty.STRING), Column("N", ty.INT)]))
    assert schema == {
        "type": "object",
        "properties": {
            "NAME": {"connect.index": 0, "oneOf": [{"type": "null"}, {"type": "string"}]},
            "N": {
                "connect.index": 1,
                "oneOf": [{"type": "null"}, {"type": "integer", "connect.type": "int32"}],
            },
        },
    }


def test_a_producers_schema_is_read_as_ksqldb_infers_it() -> None:
    schema = {
        "type": "object",
        "properties": {
            "sensor": {"type": "string"},
            "value": {"type": ["null", "number"]},
            "count": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "where": {"type": "object", "properties": {"lat": {"type": "number"}}},
            "extra": {"type": "object", "additionalProperties": {"type": "boolean"}},
        },
    }
    assert json_columns(json.dumps(schema)) == (
        Column("SENSOR", ty.STRING),
        Column("VALUE", ty.DOUBLE),
        Column("COUNT", ty.BIGINT),
        Column("TAGS", ty.ArrayType(ty.STRING)),
        Column("WHERE", ty.StructType((ty.StructField("lat", ty.DOUBLE),))),
        Column("EXTRA", ty.MapType(ty.STRING, ty.BOOLEAN)),
    )


def test_schemas_ksqldb_cannot_read_are_refused() -> None:
    with pytest.raises(SqlSemanticError, match="not an object with properties"):
        json_columns('{"type": "string"}')
    with pytest.raises(SqlSemanticError, match="Unsupported JSON schema type"):
        json_columns(
            '{"type": "object", "properties": {"x": {"oneOf": [{"type": "string"}, '
            '{"type": "integer"}]}}}'
        )
    with pytest.raises(SqlSemanticError, match="STRING keys"):
        json_schema([Column("M", ty.MapType(ty.INT, ty.INT))])


def _create(text: str) -> CreateSource:
    s = parse_statement(text)
    assert isinstance(s, CreateSource)
    return s


def test_a_create_without_columns_takes_the_registrys() -> None:
    asked = []

    def infer(
        fmt: str, subject: str, schema_id: int | None, full_name: str | None
    ) -> tuple[tuple[Column, ...], int]:
        asked.append((fmt, subject, schema_id))
        return (Column("X", ty.STRING),), schema_id or 7

    latest = declared_source(
        _create("CREATE STREAM s WITH (KAFKA_TOPIC='t', VALUE_FORMAT='JSON_SR');"), infer
    )
    assert (latest.columns, latest.value_schema_id) == ((Column("X", ty.STRING),), 7)
    given = declared_source(
        _create(
            "CREATE TABLE t (k STRING PRIMARY KEY) WITH "
            "(KAFKA_TOPIC='t', VALUE_FORMAT='JSON_SR', VALUE_SCHEMA_ID=3);"
        ),
        infer,
    )
    assert given.columns == (Column("K", ty.STRING, key=True), Column("X", ty.STRING))
    assert given.value_schema_id == 3
    assert asked == [("JSON_SR", "t-value", None), ("JSON_SR", "t-value", 3)]
    with pytest.raises(SqlSemanticError, match="Schema inference needs a registry VALUE_FORMAT"):
        declared_source(_create("CREATE STREAM s WITH (KAFKA_TOPIC='t', VALUE_FORMAT='JSON');"))


def test_every_type_reads_back_from_the_avro_schema_ksqldb_registers() -> None:
    assert avro_columns(avro_schema(EVERY_TYPE)) == EVERY_TYPE


def test_the_avro_schema_is_ksqldbs_record_of_nullable_fields() -> None:
    columns = (
        Column("ID", ty.BIGINT),
        Column("POS", ty.StructType((ty.StructField("X", ty.INT),))),
    )
    schema = json.loads(avro_schema(columns))
    fastavro.parse_schema(schema)  # a valid Avro schema
    assert schema["name"] == "KsqlDataSourceSchema"
    assert schema["namespace"] == "io.confluent.ksql.avro_schemas"
    assert schema["fields"][0] == {"name": "ID", "type": ["null", "long"], "default": None}
    nested = schema["fields"][1]["type"][1]
    assert nested["name"] == "KsqlDataSourceSchema_POS"
    assert nested["fields"] == [{"name": "X", "type": ["null", "int"], "default": None}]


def test_a_producers_avro_schema_is_read_as_ksqldb_infers_it() -> None:
    schema = {
        "type": "record",
        "name": "Reading",
        "fields": [
            {"name": "sensor", "type": "string"},
            {"name": "reading", "type": ["null", "float"]},
            {"name": "kind", "type": {"type": "enum", "name": "K", "symbols": ["A", "B"]}},
            {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
            {"name": "tags", "type": {"type": "map", "values": "long"}},
        ],
    }
    assert avro_columns(json.dumps(schema)) == (
        Column("SENSOR", ty.STRING),
        Column("READING", ty.DOUBLE),
        Column("KIND", ty.STRING),
        Column("AT", ty.TIMESTAMP),
        Column("TAGS", ty.MapType(ty.STRING, ty.BIGINT)),
    )


def test_avro_schemas_ksqldb_cannot_read_are_refused() -> None:
    with pytest.raises(SqlSemanticError, match="is not a record"):
        avro_columns('"string"')
    union = {"type": "record", "name": "R", "fields": [{"name": "u", "type": ["int", "string"]}]}
    with pytest.raises(SqlSemanticError, match="Unsupported Avro schema type"):
        avro_columns(json.dumps(union))
    with pytest.raises(SqlSemanticError, match="only supports MAP types with STRING keys"):
        avro_schema((Column("M", ty.MapType(ty.INT, ty.INT)),))


def test_an_avro_key_is_declared_and_its_schema_is_unwrapped_for_one_column() -> None:
    text = "CREATE STREAM s (k STRING KEY, v INT) WITH (KAFKA_TOPIC='t', FORMAT='AVRO');"
    source = declared_source(_create(text))
    assert (source.key_format, source.value_format) == ("AVRO", "AVRO")
    assert avro_key_schema(source.keys) == '"string"'
    two = (Column("A", ty.INT, key=True), Column("B", ty.STRING, key=True))
    assert json.loads(avro_key_schema(two))["name"] == "KsqlDataSourceSchema"


def test_schema_full_names_name_the_avro_record_and_are_refused_elsewhere() -> None:
    columns = [Column("ID", ty.STRING), Column("AT", ty.StructType((ty.StructField("X", ty.INT),)))]
    named = json.loads(avro_schema(columns, "com.acme.Order"))
    assert (named["name"], named["namespace"]) == ("Order", "com.acme")
    nested = named["fields"][1]["type"][1]
    assert (nested["name"], nested["namespace"]) == ("Order_AT", "com.acme")
    assert "namespace" not in json.loads(avro_schema(columns, "Plain"))
    assert avro_schema(columns, "Plain") != avro_schema(columns)
    fastavro.parse_schema(named)  # a valid Avro schema
    source = declared_source(
        _create(
            "CREATE STREAM s (id STRING) WITH (KAFKA_TOPIC='t', VALUE_FORMAT='AVRO', "
            "KEY_FORMAT='PROTOBUF', VALUE_SCHEMA_FULL_NAME='com.acme.Order', "
            "KEY_SCHEMA_FULL_NAME='com.acme.OrderKey');"
        )
    )
    assert (source.value_schema_name, source.key_schema_name) == (
        "com.acme.Order",
        "com.acme.OrderKey",
    )
    with pytest.raises(SqlSemanticError, match="VALUE_SCHEMA_FULL_NAME is only supported for"):
        declared_source(
            _create(
                "CREATE STREAM s (id STRING) WITH (KAFKA_TOPIC='t', VALUE_FORMAT='JSON', "
                "VALUE_SCHEMA_FULL_NAME='x.Y');"
            )
        )
