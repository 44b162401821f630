"""The registry converters' pure parts: Confluent's settings and subject names, and the schemas
Confluent's converters make of a Connect schema and read back (no Spark session, no registry)."""

from __future__ import annotations

import json

import fastavro
import pytest
from pyspark.sql.types import (
    DateType,
    DecimalType,
    IntegerType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from strom.connect.converters import AVRO, RegistrySettings, converter, converter_problem
from strom.connect.plugins import find_plugin
from strom.connect.registry_converters import (
    _connect_of_avro,
    _connect_of_json,
    avro_schema,
    json_schema,
)

STRATEGIES = "io.confluent.kafka.serializers.subject."
ROW = StructType(
    [
        StructField("id", IntegerType(), False),
        StructField("name", StringType(), True),
        StructField("small", ShortType(), False),
        StructField("amount", DecimalType(10, 2), True),
        StructField("day", DateType(), True),
        StructField("at", TimestampType(), False),
    ]
)


def test_settings_by_confluents_names() -> None:
    settings = RegistrySettings.parse(
        {
            "schema.registry.url": "http://r1:8081,http://r2:8081",
            "basic.auth.credentials.source": "USER_INFO",
            "basic.auth.user.info": "fred:letmein",
            "auto.register.schemas": "false",
            "use.latest.version": "true",
            "value.subject.name.strategy": STRATEGIES + "RecordNameStrategy",
        }
    )
    assert settings == RegistrySettings(
        "http://r1:8081",
        ("fred", "letmein"),
        False,
        True,
        "TopicNameStrategy",
        "RecordNameStrategy",
    )
    assert settings.subject("key", "orders", None) == "orders-key"
    assert settings.subject("value", None, "shop.Order") == "shop.Order"
    in_url = RegistrySettings.parse({"schema.registry.url": "https://u:p@r:8081"})
    assert (in_url.url, in_url.auth) == ("https://r:8081", ("u", "p"))
    record = RegistrySettings.parse(
        {
            "schema.registry.url": "http://r",
            "value.subject.name.strategy": "TopicRecordNameStrategy",
        }
    )
    assert record.subject("value", "orders", "shop.Order") == "orders-shop.Order"
    with pytest.raises(ValueError, match="routing transform"):
        RegistrySettings.parse({"schema.registry.url": "http://r"}).subject("value", None, "x")


def test_bad_settings_are_named() -> None:
    assert converter_problem(AVRO) is None
    with pytest.raises(ValueError, match=r'"schema.registry.url" which has no default'):
        converter(AVRO, {})
    with pytest.raises(ValueError, match=r"value\.subject\.name\.strategy"):
        converter(AVRO, {"schema.registry.url": "http://r", "value.subject.name.strategy": "No"})


def test_validate_names_a_registry_converter_without_its_registry() -> None:
    plugin = find_plugin("FileStreamSink")
    config = {"topics": "t", "file": "f", "value.converter": AVRO}
    problems = plugin.problems(config)["value.converter"]
    assert problems == [
        f"Invalid value {AVRO} for configuration value.converter: Missing required "
        'configuration "schema.registry.url" which has no default value.'
    ]
    config["value.converter.schema.registry.url"] = "http://localhost:8081"
    assert "value.converter" not in plugin.problems(config)


def test_avro_schema_is_confluents_and_reads_back_as_the_connect_schema() -> None:
    schema = avro_schema(ROW, "orders")
    fastavro.parse_schema(json.loads(json.dumps(schema)))  # a valid Avro schema
    assert (schema["name"], schema["connect.name"]) == ("orders", "orders")
    fields = {f["name"]: f for f in schema["fields"]}
    assert fields["id"]["type"] == "int"
    assert fields["name"] == {"name": "name", "type": ["null", "string"], "default": None}
    assert fields["small"]["type"] == {"type": "int", "connect.type": "int16"}
    assert fields["amount"]["type"][1]["logicalType"] == "decimal"
    assert fields["at"]["type"]["logicalType"] == "timestamp-millis"
    assert avro_schema(ROW)["name"] == "ConnectDefault"
    connect = _connect_of_avro(schema)
    assert connect["name"] == "orders" and connect["optional"] is False
    by_name = {f["field"]: f for f in connect["fields"]}
    assert by_name["id"] == {"type": "int32", "optional": False, "field": "id"}
    assert by_name["name"] == {"type": "string", "optional": True, "field": "name"}
    assert by_name["small"]["type"] == "int16"
    assert by_name["amount"]["parameters"] == {"scale": "2", "connect.decimal.precision": "10"}
    assert by_name["day"]["name"] == "org.apache.kafka.connect.data.Date"
    with pytest.raises(ValueError, match="unions"):
        _connect_of_avro(["null", "string", "int"])


def test_json_schema_is_confluents_and_reads_back_as_the_connect_schema() -> None:
    schema = json_schema(ROW, "orders")
    assert schema["title"] == "orders" and schema["type"] == "object"
    assert schema["properties"]["name"]["oneOf"] == [{"type": "null"}, {"type": "string"}]
    assert schema["properties"]["id"]["connect.type"] == "int32"
    connect = _connect_of_json(schema)
    by_name = {f["field"]: f for f in connect["fields"]}
    assert by_name["id"] == {"type": "int32", "optional": False, "field": "id"}
    assert by_name["name"]["optional"] is True
    assert by_name["amount"]["name"] == "org.apache.kafka.connect.data.Decimal"
    plain = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    assert _connect_of_json(plain)["fields"] == [{"type": "int64", "optional": False, "field": "n"}]
