"""Kafka Connect's converters by their class names, as Spark column expressions (no
per-record Python): ``serialize`` turns a connector's data (a column and its Spark type, the
Connect schema) into a record's bytes, ``to_text`` turns a record's bytes into the text a
file sink writes. Data a converter cannot take fails the query (``raise_error``) with
Connect's message, as a task with ``errors.tolerance=none`` fails."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructType,
    TimestampType,
)

__all__ = ["CONVERTERS", "Converter", "RegistrySettings", "converter", "converter_problem"]

JSON = "org.apache.kafka.connect.json.JsonConverter"
STRING = "org.apache.kafka.connect.storage.StringConverter"
BYTES = "org.apache.kafka.connect.converters.ByteArrayConverter"
AVRO = "io.confluent.connect.avro.AvroConverter"
JSON_SCHEMA = "io.confluent.connect.json.JsonSchemaConverter"
PROTOBUF = "io.confluent.connect.protobuf.ProtobufConverter"
REGISTRY_CONVERTERS = (AVRO, JSON_SCHEMA, PROTOBUF)
CONVERTERS = (JSON, STRING, BYTES, *REGISTRY_CONVERTERS)
_STRATEGIES = ("TopicNameStrategy", "RecordNameStrategy", "TopicRecordNameStrategy")
_STRATEGY_PACKAGE = "io.confluent.kafka.serializers.subject."

_ENVELOPE_ERROR = (
    'JsonConverter with schemas.enable requires "schema" and "payload" fields and may not '
    "contain additional fields. If you are trying to deserialize plain JSON data, set "
    "schemas.enable=false in your converter configuration."
)
_JSON_ERROR = "Converting byte[] to Kafka Connect data failed due to serialization error: "


_PRIMITIVES: tuple[tuple[type[DataType], str], ...] = (
    (ShortType, "int16"),
    (IntegerType, "int32"),
    (LongType, "int64"),
    (FloatType, "float"),
    (DoubleType, "double"),
    (BooleanType, "boolean"),
    (StringType, "string"),
    (BinaryType, "bytes"),
)
DECIMAL = "org.apache.kafka.connect.data.Decimal"
DATE = "org.apache.kafka.connect.data.Date"
TIMESTAMP = "org.apache.kafka.connect.data.Timestamp"


def _connect_type(data_type: DataType) -> str:
    if isinstance(data_type, StringType):
        return "STRING"
    if isinstance(data_type, BinaryType):
        return "BYTES"
    return data_type.simpleString().upper()


def connect_schema(
    data_type: DataType, optional: bool, name: str | None = None, version: int | None = None
) -> dict[str, Any]:
    """The Connect schema of a Spark type, as JsonConverter writes it (``schema`` of the
    envelope): structs, primitives, and Connect's logical Decimal, Date and Timestamp."""
    schema: dict[str, Any]
    if isinstance(data_type, StructType):
        fields = [
            {**connect_schema(f.dataType, f.nullable), "field": f.name} for f in data_type.fields
        ]
        schema = {"type": "struct", "fields": fields, "optional": optional}
    elif isinstance(data_type, DecimalType):
        parameters = {"scale": str(data_type.scale)}
        parameters["connect.decimal.precision"] = str(data_type.precision)
        schema = {"type": "bytes", "optional": optional, "name": DECIMAL, "version": 1}
        schema["parameters"] = parameters
    elif isinstance(data_type, DateType):
        schema = {"type": "int32", "optional": optional, "name": DATE, "version": 1}
    elif isinstance(data_type, TimestampType):
        schema = {"type": "int64", "optional": optional, "name": TIMESTAMP, "version": 1}
    else:
        kind = next((k for t, k in _PRIMITIVES if isinstance(data_type, t)), None)
        if kind is None:
            raise ValueError(f"JsonConverter: {data_type.simpleString()} data is not supported")
        schema = {"type": kind, "optional": optional}
    if name is not None:
        schema["name"] = name
    if version is not None:
        schema["version"] = version
    return schema


def json_text(data: Column) -> Column:
    """Any column as its JSON text, as Spark's ``to_json`` writes it (``{"v":X}`` -> ``X``),
    nulls included."""
    return F.regexp_extract(
        F.to_json(F.struct(data.alias("v")), {"ignoreNullFields": "false"}), r'^\{"v":(.*)\}$', 1
    )


def json_payload(data: Column, data_type: DataType) -> Column:
    """``data`` as JsonConverter's payload wants it: dates as days, timestamps as epoch
    milliseconds, decimals as the base64 of the unscaled value's two's complement bytes
    (precision up to 18), bytes as base64 (Spark's to_json already writes binary so)."""
    if isinstance(data_type, StructType):
        fields = [json_payload(data[f.name], f.dataType).alias(f.name) for f in data_type.fields]
        return F.when(data.isNull(), F.lit(None)).otherwise(F.struct(*fields))
    if isinstance(data_type, DateType):
        return F.unix_date(data)
    if isinstance(data_type, TimestampType):
        return F.unix_millis(data)
    if isinstance(data_type, DecimalType):
        if data_type.precision > 18:
            raise ValueError("JsonConverter: decimals of precision above 18 are not supported yet")
        unscaled = (data * F.lit(10**data_type.scale)).cast("long")
        return F.base64(F.unhex(F.lpad(F.hex(unscaled), 16, "0")))
    return data


def _true(settings: Mapping[str, str], name: str, default: bool) -> bool:
    return settings.get(name, str(default)).strip().lower() == "true"


@dataclass(frozen=True)
class RegistrySettings:
    """A registry converter's settings, by Confluent's names: ``schema.registry.url`` (the
    first of a list), ``basic.auth.user.info`` with ``basic.auth.credentials.source=USER_INFO``,
    ``auto.register.schemas``, ``use.latest.version``, the key's and value's
    ``*.subject.name.strategy`` and ProtobufConverter's ``optional.for.nullables``."""

    url: str
    auth: tuple[str, str] | None = None
    auto_register: bool = True
    use_latest: bool = False
    key_strategy: str = "TopicNameStrategy"
    value_strategy: str = "TopicNameStrategy"
    optional_nullables: bool = False

    @classmethod
    def parse(cls, settings: Mapping[str, str]) -> RegistrySettings:
        """The settings, or ValueError naming the first problem."""
        url = settings.get("schema.registry.url", "").split(",")[0].strip()
        if not url:
            raise ValueError(
                'Missing required configuration "schema.registry.url" which has no default value.'
            )
        source = settings.get("basic.auth.credentials.source", "URL").strip().upper()
        info = settings.get("basic.auth.user.info", "").strip()
        if source == "URL" and "@" in url.partition("://")[2].partition("/")[0]:
            scheme, _, rest = url.partition("://")
            info, _, host = rest.partition("@")
            url = f"{scheme}://{host}"
        elif source not in ("URL", "USER_INFO"):
            raise ValueError(
                f"basic.auth.credentials.source {source} is not supported (URL, USER_INFO)"
            )
        user, colon, password = info.partition(":")
        strategies = []
        for part in ("key", "value"):
            named = settings.get(f"{part}.subject.name.strategy", "TopicNameStrategy").strip()
            simple = named.removeprefix(_STRATEGY_PACKAGE)
            if simple not in _STRATEGIES:
                raise ValueError(
                    f"Invalid value {named} for configuration {part}.subject.name.strategy: "
                    f"strom knows {', '.join(_STRATEGY_PACKAGE + s for s in _STRATEGIES)}"
                )
            strategies.append(simple)
        return cls(
            url,
            (user, password) if colon else None,
            _true(settings, "auto.register.schemas", True),
            _true(settings, "use.latest.version", False),
            key_strategy=strategies[0],
            value_strategy=strategies[1],
            optional_nullables=_true(settings, "optional.for.nullables", False),
        )

    def subject(self, part: str, topic: str | None, record: str | None) -> str:
        """The subject of a key's or value's schema (``part``), as its strategy names it."""
        strategy = self.key_strategy if part == "key" else self.value_strategy
        if strategy != "TopicNameStrategy" and record is None:
            raise ValueError(f"{strategy} needs a record schema; the {part} has none")
        if strategy == "RecordNameStrategy":
            return str(record)
        if topic is None:
            raise ValueError(
                f"{strategy}: strom registers a source's schemas when it starts, and the "
                f"{part}'s topic is not known then (a routing transform): use RecordNameStrategy"
            )
        return f"{topic}-{part}" if strategy == "TopicNameStrategy" else f"{topic}-{record}"


@dataclass(frozen=True)
class Converter:
    """One converter: its class and, for JsonConverter, ``schemas.enable``; for the registry's
    converters (``registry_converters``) their registry settings."""

    class_name: str
    schemas_enable: bool = True
    registry: RegistrySettings | None = None

    def serialize(
        self,
        data: Column,
        data_type: DataType,
        name: str | None = None,
        version: int | None = None,
    ) -> Column:
        """A record's bytes for ``data`` (null stays null, a tombstone); ``name`` and
        ``version`` name a struct's Connect schema."""
        if isinstance(data_type, StructType) and self.class_name == STRING:
            # Connect's Struct.toString(): Struct{a=1,b=x}, null fields left out
            shown = [
                F.concat(F.lit(f"{f.name}="), data[f.name].cast("string")) for f in data_type.fields
            ]
            text = F.concat(F.lit("Struct{"), F.concat_ws(",", *shown), F.lit("}"))
            return F.when(data.isNull(), F.lit(None)).otherwise(F.encode(text, "UTF-8"))
        if isinstance(data_type, StructType) and self.class_name != BYTES:
            payload = F.to_json(json_payload(data, data_type), {"ignoreNullFields": "false"})
            if self.schemas_enable:
                schema = json.dumps(
                    connect_schema(data_type, False, name, version), separators=(",", ":")
                )
                payload = F.concat(F.lit(f'{{"schema":{schema},"payload":'), payload, F.lit("}"))
            return F.when(data.isNull(), F.lit(None)).otherwise(F.encode(payload, "UTF-8"))
        if self.class_name == STRING:
            return F.when(data.isNull(), F.lit(None)).otherwise(
                F.encode(data.cast("string"), "UTF-8")
            )
        if self.class_name == BYTES:
            if not isinstance(data_type, BinaryType):
                message = f"Invalid schema type for ByteArrayConverter: {_connect_type(data_type)}"
                return F.when(data.isNull(), F.lit(None).cast("binary")).otherwise(
                    F.raise_error(F.lit(message)).cast("binary")
                )
            return data
        if not isinstance(data_type, StringType):
            raise ValueError(f"JsonConverter: {data_type.simpleString()} data is not supported yet")
        if self.schemas_enable:
            envelope = F.to_json(
                F.struct(
                    F.struct(F.lit("string").alias("type"), F.lit(False).alias("optional")).alias(
                        "schema"
                    ),
                    data.alias("payload"),
                )
            )
            return F.when(data.isNull(), F.lit(None)).otherwise(F.encode(envelope, "UTF-8"))
        return F.when(data.isNull(), F.lit(None)).otherwise(F.encode(json_text(data), "UTF-8"))

    def text_error(self, raw: Column) -> Column:
        """Why ``raw`` is no data of this converter (Connect's message), or null."""
        if self.registry is not None:
            framed = (F.length(raw) >= 5) & (F.hex(F.substring(raw, 1, 1)) == F.lit("00"))
            return F.when(raw.isNotNull() & ~framed, F.lit("Unknown magic byte!"))
        if self.class_name in (STRING, BYTES):
            return F.lit(None).cast("string")
        text = raw.cast("string")
        if self.schemas_enable:
            keys = F.array_sort(F.json_object_keys(text))
            good = F.coalesce(keys == F.array(F.lit("payload"), F.lit("schema")), F.lit(False))
            return F.when(raw.isNotNull() & ~good, F.lit(_ENVELOPE_ERROR))
        bad = F.get_json_object(text, "$").isNull() & (F.trim(text) != "null")
        return F.when(raw.isNotNull() & bad, F.concat(F.lit(_JSON_ERROR), text))

    def to_text(self, raw: Column) -> Column:
        """The record's value as text: a string as itself, other JSON as its JSON text, null
        as ``null`` (what Kafka's FileStreamSink prints). Data the converter cannot take fails
        the query with Connect's message (``text_error``)."""
        text = raw.cast("string")
        if self.class_name in (STRING, BYTES):
            return F.coalesce(text, F.lit("null"))
        value = F.get_json_object(text, "$.payload" if self.schemas_enable else "$")
        error = self.text_error(raw)
        value = F.when(error.isNotNull(), F.raise_error(error).cast("string")).otherwise(value)
        return F.when(raw.isNull(), F.lit("null")).otherwise(F.coalesce(value, F.lit("null")))


def converter_problem(class_name: str) -> str | None:
    """Why ``class_name`` cannot be used as a converter, or None."""
    if class_name in CONVERTERS:
        return None
    return f"Class {class_name} could not be found."


def converter(class_name: str, settings: Mapping[str, str]) -> Converter:
    """The converter of ``class_name`` with its settings (names without the ``key.converter.``
    or ``value.converter.`` prefix)."""
    problem = converter_problem(class_name)
    if problem is not None:
        raise ValueError(problem)
    registry = RegistrySettings.parse(settings) if class_name in REGISTRY_CONVERTERS else None
    return Converter(class_name, _true(settings, "schemas.enable", True), registry)
