"""The schema registry's converters (Confluent's ``AvroConverter``, ``JsonSchemaConverter``,
``ProtobufConverter``) on Spark, in Confluent's wire format (the magic byte 0, the 4-byte
schema id, the payload; Protobuf's with its message indexes).

Sources (``serialize``): the Connect schema of the data (its Spark type, names and declared
optionality) becomes an Avro record, a JSON Schema or a ``.proto`` as Confluent's
``AvroData``, ``JsonSchemaData`` and ``ProtobufData`` make them (optional fields as
``["null", T]`` unions / ``oneOf``; ``protobuf_data``), which is registered
(``auto.register.schemas``), looked up, or replaced by the subject's latest
(``use.latest.version``) on the driver when the query starts; the executors only frame: Avro
records through spark-sql's own Avro writer and Protobuf messages through the SQL engine's
encoder, both in the JVM (``strom.spark.jvm``), JSON through ``to_json``. Sinks
(``decoded``): a micro-batch's distinct schema ids are collected (one small job), each
schema is fetched once, and every value becomes JsonConverter's envelope (Connect schema
and payload), so a sink written for ``JsonConverter`` with schemas reads it unchanged:
Avro decoded in the JVM, JSON parsed by ``from_json``; Protobuf only through a Python UDF per
record (``RegistryCodec``), as Python's protobuf runtime is the only decoder at hand."""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from strom.connect.converters import (
    AVRO,
    DATE,
    DECIMAL,
    JSON,
    JSON_SCHEMA,
    TIMESTAMP,
    Converter,
    RegistrySettings,
    json_payload,
    json_text,
)
from strom.connect.protobuf_data import protobuf_schema, record_name
from strom.registry.codec import RegistryCodec, RegistrySchema
from strom.registry.protobuf_schema import ProtobufSchema
from strom.registry.schema_types import SchemaType
from strom.registry.wire import frame
from strom.spark.avro import as_plain_data, avro_type
from strom.spark.jvm import avro_decode, avro_encode, protobuf_encode
from strom.spark.registry_formats import registry_codec

__all__ = ["avro_schema", "decoded", "json_schema", "plain", "serialize"]

_NAMESPACE = "io.confluent.connect.avro"
_AVRO_PRIMITIVES: tuple[tuple[type[DataType], Any], ...] = (
    (ByteType, {"type": "int", "connect.type": "int8"}),
    (ShortType, {"type": "int", "connect.type": "int16"}),
    (IntegerType, "int"),
    (LongType, "long"),
    (FloatType, "float"),
    (DoubleType, "double"),
    (BooleanType, "boolean"),
    (StringType, "string"),
    (BinaryType, "bytes"),
)
_JSON_PRIMITIVES: tuple[tuple[type[DataType], dict[str, Any]], ...] = (
    (ByteType, {"type": "integer", "connect.type": "int8"}),
    (ShortType, {"type": "integer", "connect.type": "int16"}),
    (IntegerType, {"type": "integer", "connect.type": "int32"}),
    (LongType, {"type": "integer", "connect.type": "int64"}),
    (FloatType, {"type": "number", "connect.type": "float32"}),
    (DoubleType, {"type": "number", "connect.type": "float64"}),
    (BooleanType, {"type": "boolean"}),
    (StringType, {"type": "string"}),
    (BinaryType, {"type": "string", "connect.type": "bytes"}),
)
_AVRO_TO_CONNECT = {
    "int": "int32",
    "long": "int64",
    "float": "float",
    "double": "double",
    "boolean": "boolean",
    "string": "string",
    "bytes": "bytes",
    "enum": "string",
    "fixed": "bytes",
}
_CONNECT_TO_SPARK: dict[str, DataType] = {
    "int8": ByteType(),
    "int16": ShortType(),
    "int32": IntegerType(),
    "int64": LongType(),
    "float": FloatType(),
    "float32": FloatType(),
    "double": DoubleType(),
    "float64": DoubleType(),
    "boolean": BooleanType(),
    "string": StringType(),
    "bytes": BinaryType(),
}
_PROTO_TO_CONNECT = {
    1: "float64",
    2: "float32",
    8: "boolean",
    9: "string",
    12: "bytes",
    14: "string",
}
_PROTO_INT64 = {3, 4, 6, 16, 18}  # int64, uint64, fixed64, sfixed64, sint64


def _logical(data_type: DataType) -> dict[str, Any] | None:
    """Connect's logical types (Decimal, Date, Timestamp) as Avro and Confluent write them."""
    if isinstance(data_type, DecimalType):
        parameters = {"scale": str(data_type.scale)}
        parameters["connect.decimal.precision"] = str(data_type.precision)
        return {
            "type": "bytes",
            "scale": data_type.scale,
            "precision": data_type.precision,
            "connect.version": 1,
            "connect.parameters": parameters,
            "connect.name": DECIMAL,
            "logicalType": "decimal",
        }
    if isinstance(data_type, DateType):
        return {"type": "int", "connect.version": 1, "connect.name": DATE, "logicalType": "date"}
    if isinstance(data_type, TimestampType):
        return {
            "type": "long",
            "connect.version": 1,
            "connect.name": TIMESTAMP,
            "logicalType": "timestamp-millis",
        }
    return None


def avro_schema(data_type: DataType, name: str | None = None) -> Any:
    """The Avro schema of a Connect schema (a Spark type with its fields' optionality), as
    Confluent's AvroConverter registers it: optional fields as ``["null", T]`` defaulting to
    null, int8/int16 and the logical types marked with ``connect.*`` properties."""
    if isinstance(data_type, StructType):
        fields = []
        for f in data_type.fields:
            kind = avro_schema(f.dataType)
            if f.nullable:
                fields.append({"name": f.name, "type": ["null", kind], "default": None})
            else:
                fields.append({"name": f.name, "type": kind})
        record: dict[str, Any] = {"type": "record"}
        if name:
            namespace, _, simple = name.rpartition(".")
            record["name"] = simple
            if namespace:
                record["namespace"] = namespace
        else:
            record.update(name="ConnectDefault", namespace=_NAMESPACE)
        record["fields"] = fields
        if name:
            record["connect.name"] = name
        return record
    if isinstance(data_type, ArrayType):
        items = avro_schema(data_type.elementType)
        return {"type": "array", "items": ["null", items] if data_type.containsNull else items}
    if isinstance(data_type, MapType) and isinstance(data_type.keyType, StringType):
        values = avro_schema(data_type.valueType)
        return {
            "type": "map",
            "values": ["null", values] if data_type.valueContainsNull else values,
        }
    logical = _logical(data_type)
    if logical is not None:
        return logical
    found = next((kind for t, kind in _AVRO_PRIMITIVES if isinstance(data_type, t)), None)
    if found is None:
        raise ValueError(f"AvroConverter: {data_type.simpleString()} data is not supported")
    return found


def json_schema(data_type: DataType, name: str | None = None) -> dict[str, Any]:
    """The JSON Schema of a Connect schema, as Confluent's JsonSchemaConverter registers it:
    objects with ``connect.index``ed properties, optional ones as ``oneOf`` with null."""
    schema: dict[str, Any]
    if isinstance(data_type, StructType):
        properties = {}
        for index, f in enumerate(data_type.fields):
            kind = json_schema(f.dataType)
            if f.nullable:
                kind = {"oneOf": [{"type": "null"}, kind]}
            properties[f.name] = {**kind, "connect.index": index}
        schema = {"type": "object", "properties": properties}
    elif isinstance(data_type, ArrayType):
        schema = {"type": "array", "items": json_schema(data_type.elementType)}
    elif isinstance(data_type, DecimalType):
        parameters = {"scale": str(data_type.scale)}
        parameters["connect.decimal.precision"] = str(data_type.precision)
        schema = {"type": "number", "title": DECIMAL, "connect.version": 1}
        schema.update({"connect.parameters": parameters, "connect.type": "bytes"})
    elif isinstance(data_type, DateType):
        schema = {"type": "integer", "title": DATE, "connect.version": 1, "connect.type": "int32"}
    elif isinstance(data_type, TimestampType):
        schema = {"type": "integer", "title": TIMESTAMP, "connect.version": 1}
        schema["connect.type"] = "int64"
    else:
        found = next((dict(k) for t, k in _JSON_PRIMITIVES if isinstance(data_type, t)), None)
        if found is None:
            raise ValueError(
                f"JsonSchemaConverter: {data_type.simpleString()} data is not supported"
            )
        schema = found
    if name:
        schema["title"] = name
    return schema


def _schema_payload(data: Column, data_type: DataType) -> Column:
    """``data`` as JsonSchemaConverter writes it: dates as days, timestamps as epoch
    milliseconds, decimals as JSON numbers, bytes as base64 (``to_json``'s own)."""
    if isinstance(data_type, StructType):
        fields = [_schema_payload(data[f.name], f.dataType).alias(f.name) for f in data_type.fields]
        return F.when(data.isNull(), F.lit(None)).otherwise(F.struct(*fields))
    if isinstance(data_type, DateType):
        return F.unix_date(data)
    if isinstance(data_type, TimestampType):
        return F.unix_millis(data)
    return data


def _codec(settings: RegistrySettings) -> RegistryCodec:
    return registry_codec(settings.url, settings.auth)


def _writer(
    settings: RegistrySettings, subject: str, schema_type: SchemaType, text: str
) -> tuple[int, str]:
    """The id and text of the schema to write under ``subject``, as the settings choose it."""
    codec = _codec(settings)
    if settings.use_latest:
        latest = codec.latest(subject)
        return latest.id, latest.text
    if settings.auto_register:
        return codec.register(subject, schema_type, text), text
    return codec.lookup(subject, schema_type, text), text


def _record_name(schema: Any) -> str | None:
    if not isinstance(schema, dict) or schema.get("type") != "record":
        return None
    namespace = schema.get("namespace")
    return f"{namespace}.{schema['name']}" if namespace else str(schema["name"])


def serialize(  # noqa: PLR0917 - a converter's call with the record's part and topic
    converter: Converter,
    data: Column,
    data_type: DataType,
    name: str | None,
    part: str,
    topic: str | None,
) -> Column:
    """A source's ``part`` (key or value) in the registry's wire format; the schema is
    registered (or found) now, under the subject of ``topic`` its strategy names."""
    settings = converter.registry
    assert settings is not None
    if converter.class_name == AVRO:
        schema = avro_schema(data_type, name)
        subject = settings.subject(part, topic, _record_name(schema))
        text = json.dumps(schema, separators=(",", ":"))
        schema_id, text = _writer(settings, subject, SchemaType.AVRO, text)
        if isinstance(data_type, StructType):  # in the JVM, no Python per record
            return avro_encode(data, data_type.simpleString(), text, schema_id)
        return _python_encode(data, settings, schema_id)
    if converter.class_name == JSON_SCHEMA:
        document = json_schema(data_type, name)
        subject = settings.subject(part, topic, document.get("title"))
        text = json.dumps(document, separators=(",", ":"))
        schema_id, _ = _writer(settings, subject, SchemaType.JSON, text)
        payload = F.encode(json_text(_schema_payload(data, data_type)), "UTF-8")
        framed = F.concat(F.lit(frame(schema_id, b"")), payload)
        return F.when(data.isNull(), F.lit(None).cast("binary")).otherwise(framed)
    text = protobuf_schema(data_type, name, settings.optional_nullables)
    subject = settings.subject(part, topic, record_name(name))
    schema_id, text = _writer(settings, subject, SchemaType.PROTOBUF, text)
    return protobuf_encode(data, data_type.simpleString(), text, schema_id)  # in the JVM


def _python_encode(data: Column, settings: RegistrySettings, schema_id: int) -> Column:
    """A primitive (not a record) through fastavro: one Python call per record."""

    def encode(value: Any) -> bytes | None:
        return None if value is None else _codec(settings).encode(schema_id, as_plain_data(value))

    return F.udf(encode, BinaryType(), useArrow=False)(data)


# -- sinks: registry-framed values to JsonConverter's envelope -----------------------------


def _connect_of_avro(schema: Any, optional: bool = False) -> dict[str, Any]:
    """The Connect schema of an Avro schema, as Confluent's AvroData reads it back."""
    if isinstance(schema, list):
        members = [m for m in schema if m != "null"]
        if len(members) != 1:
            raise ValueError(
                f"AvroConverter: unions other than [null, T] are not supported yet: {schema}"
            )
        return _connect_of_avro(members[0], optional or len(members) < len(schema))
    if isinstance(schema, str):
        schema = {"type": schema}
    kind, logical = schema["type"], schema.get("logicalType")
    if isinstance(kind, dict | list):
        return _connect_of_avro(kind, optional)
    if kind == "record":
        fields = [{**_connect_of_avro(f["type"]), "field": f["name"]} for f in schema["fields"]]
        name = schema.get("connect.name") or _record_name(schema)
        return {"type": "struct", "fields": fields, "optional": optional, "name": name}
    if kind == "array":
        return {"type": "array", "items": _connect_of_avro(schema["items"]), "optional": optional}
    if kind == "map":
        keys = {"type": "string", "optional": False}
        values = _connect_of_avro(schema["values"])
        return {"type": "map", "keys": keys, "values": values, "optional": optional}
    if logical == "decimal":
        parameters = {"scale": str(schema.get("scale", 0))}
        parameters["connect.decimal.precision"] = str(schema["precision"])
        out = {"type": "bytes", "optional": optional, "name": DECIMAL, "version": 1}
        return {**out, "parameters": parameters}
    if logical == "date":
        return {"type": "int32", "optional": optional, "name": DATE, "version": 1}
    if logical in ("timestamp-millis", "timestamp-micros"):
        return {"type": "int64", "optional": optional, "name": TIMESTAMP, "version": 1}
    if kind not in _AVRO_TO_CONNECT:
        raise ValueError(f"AvroConverter: Avro type {kind} is not supported")
    return {"type": schema.get("connect.type") or _AVRO_TO_CONNECT[kind], "optional": optional}


def _connect_of_json(schema: dict[str, Any], optional: bool = False) -> dict[str, Any]:
    """The Connect schema of a JSON Schema, as Confluent's JsonSchemaData reads it back
    (``connect.type`` and the logical types' titles kept; integers int64, numbers float64)."""
    members = schema.get("oneOf") or schema.get("anyOf")
    if members:
        kinds = [m for m in members if m.get("type") != "null"]
        if len(kinds) != 1:
            raise ValueError(f"JsonSchemaConverter: only oneOf [null, T] is supported: {members}")
        return _connect_of_json(kinds[0], optional or len(kinds) < len(members))
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        return _connect_of_json({**schema, "type": kinds[0]}, optional or len(kinds) < len(kind))
    title = schema.get("title")
    if kind == "object":
        required = set(schema.get("required", []))
        properties = schema.get("properties", {})
        ordered = sorted(properties.items(), key=lambda p: p[1].get("connect.index", 0))
        fields = [
            {**_connect_of_json(s, n not in required and "connect.index" not in s), "field": n}
            for n, s in ordered
        ]
        return {"type": "struct", "fields": fields, "optional": optional, "name": title}
    if kind == "array":
        return {"type": "array", "items": _connect_of_json(schema["items"]), "optional": optional}
    if title == DECIMAL:
        parameters = schema.get("connect.parameters") or {"scale": "0"}
        return {
            "type": "bytes",
            "optional": optional,
            "name": DECIMAL,
            "version": 1,
            "parameters": parameters,
        }
    default = {"integer": "int64", "number": "float64", "boolean": "boolean", "string": "string"}
    if kind not in default:
        raise ValueError(f"JsonSchemaConverter: JSON Schema type {kind} is not supported")
    out: dict[str, Any] = {
        "type": schema.get("connect.type") or default[kind],
        "optional": optional,
    }
    if title in (DATE, TIMESTAMP):
        out.update(name=title, version=1)
    return out


def _connect_of_proto(schema: RegistrySchema) -> dict[str, Any]:
    """The Connect schema of a Protobuf schema's first message (proto3 scalars required,
    messages and ``optional`` fields optional)."""
    file = ProtobufSchema(schema.text, ()).file
    messages = {m.name: m for m in file.message_type}

    def struct(message: Any, optional: bool) -> dict[str, Any]:
        fields = []
        for f in message.field:
            if f.type == 11:  # a message
                kind = struct(messages[f.type_name.rpartition(".")[2]], True)
            elif f.type in _PROTO_INT64:
                kind = {"type": "int64", "optional": f.proto3_optional}
            else:
                connect = _PROTO_TO_CONNECT.get(f.type, "int32")
                kind = {"type": connect, "optional": f.proto3_optional}
            if f.label == 3:  # repeated
                kind = {"type": "array", "items": kind, "optional": True}
            fields.append({**kind, "field": f.name})
        return {"type": "struct", "fields": fields, "optional": optional, "name": message.name}

    return struct(file.message_type[0], False)


def _spark_of_connect(schema: dict[str, Any]) -> DataType:
    """The Spark type a Connect schema's JSON payload is parsed into (dates and timestamps
    stay the numbers JsonConverter writes)."""
    kind = schema["type"]
    if kind == "struct":
        return StructType(
            [StructField(f["field"], _spark_of_connect(f), f["optional"]) for f in schema["fields"]]
        )
    if kind == "array":
        return ArrayType(_spark_of_connect(schema["items"]))
    if kind == "map":
        return MapType(StringType(), _spark_of_connect(schema["values"]))
    if schema.get("name") == DECIMAL:
        parameters = schema.get("parameters", {})
        precision = int(parameters.get("connect.decimal.precision", "18"))
        return DecimalType(precision, int(parameters.get("scale", "0")))
    return _CONNECT_TO_SPARK[kind]


def _from_json_text(text: Column, connect: dict[str, Any]) -> Column:
    """JSON text (a JSON Schema or Protobuf payload) as JsonConverter's payload of ``connect``."""
    spark_type = _spark_of_connect(connect)
    if isinstance(spark_type, StructType):
        return F.to_json(
            json_payload(F.from_json(text, spark_type), spark_type), {"ignoreNullFields": "false"}
        )
    return text


def _proto_text(data: Column, settings: RegistrySettings) -> Column:
    def decode(value: bytes | None) -> str | None:
        if value is None:
            return None
        return json.dumps(_codec(settings).decode(value), separators=(",", ":"), default=str)

    return F.udf(decode, StringType(), useArrow=False)(data)


def _payload(
    schema_id: int, data: Column, settings: RegistrySettings, part: str
) -> tuple[dict[str, Any], Column]:
    """The Connect schema of registered schema ``schema_id``, and ``data``'s (the record's
    ``part``) payload text in it; Avro that cannot be read fails the query with Confluent's
    message."""
    schema = _codec(settings).schema(schema_id)
    if schema.schema_type is SchemaType.AVRO:
        parsed = json.loads(schema.text)
        connect = _connect_of_avro(parsed)
        if connect["type"] != "struct":  # a primitive: fastavro, one call per record
            return connect, _proto_text(data, settings)
        spark_type = avro_type(parsed)
        decoded = avro_decode(data, schema.text, schema_id, "", part)
        unreadable = F.raise_error(F.lit(f"Error deserializing Avro message for id {schema_id}"))
        text = F.to_json(json_payload(decoded, spark_type), {"ignoreNullFields": "false"})
        return connect, F.when(decoded.isNull(), unreadable.cast("string")).otherwise(text)
    if schema.schema_type is SchemaType.JSON:
        connect = _connect_of_json(json.loads(schema.text))
        text = F.substring(data, 6, 2**31 - 1).cast("string")
        return connect, _from_json_text(text, connect)
    connect = _connect_of_proto(schema)
    return connect, _from_json_text(_proto_text(data, settings), connect)


def decoded(frame: DataFrame, part: str, converter: Converter) -> DataFrame:
    """A batch's ``part`` (key or value bytes) from the registry's wire format to
    JsonConverter's envelope, each value by its schema id (one job collects the batch's ids;
    a value that is not framed fails the query with Confluent's message)."""
    settings = converter.registry
    if settings is None or frame.isStreaming:
        return frame
    raw = F.col(part)
    schema_id = F.conv(F.hex(F.substring(raw, 2, 4)), 16, 10).cast("long")
    rows = frame.where(raw.isNotNull()).select(schema_id.alias("id")).distinct().collect()
    envelope = F.when(raw.isNull(), F.lit(None).cast("string"))
    framed = (F.length(raw) >= 5) & (F.hex(F.substring(raw, 1, 1)) == F.lit("00"))
    envelope = envelope.when(~framed, F.raise_error(F.lit("Unknown magic byte!")).cast("string"))
    for row in rows:
        connect, payload = _payload(int(row["id"]), raw, settings, part)
        head = '{"schema":' + json.dumps(connect, separators=(",", ":")) + ',"payload":'
        envelope = envelope.when(schema_id == row["id"], F.concat(F.lit(head), payload, F.lit("}")))
    return frame.withColumn(part, F.encode(envelope, "UTF-8"))


def plain(converter: Converter) -> Converter:
    """The converter that reads what ``decoded`` made of ``converter``'s values."""
    return Converter(JSON) if converter.registry is not None else converter
