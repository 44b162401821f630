"""Keys and values in ksqlDB's formats, read from and written to the `strom` source's binary
columns as Spark expressions (no Python per record):

- JSON: an object whose fields are the columns (names matched case-insensitively on read, as
  ksqlDB does, so the object is read as a map first: Spark's JSON reader matches names
  exactly; written as the columns are named, NULLs included).
- DELIMITED: the columns' values in order, separated by commas (a value holding a comma, a
  quote or a line break written in double quotes, as CSV).
- KAFKA: one column, as Kafka's own serializers write it: a STRING as UTF-8, an INTEGER as 4
  big-endian bytes, a BIGINT as 8.
- JSON_SR: JSON in Confluent's schema-registry wire format: the magic byte 0 and the 4-byte
  schema id, then the JSON (read as JSON after those 5 bytes; written behind the id of the
  schema the engine registered for the sink).
- AVRO: Avro binary in the same wire format, decoded with the schema of the source's id (a
  record of another id with its own, from the registry, resolved to it) and encoded with the
  one the engine registered for the sink, in the JVM (`strom.spark.jvm`: spark-sql's own Avro
  converters).
- PROTOBUF: a Protobuf message in the same wire format (the message indexes after the id), in
  the JVM too (`strom.spark.jvm`: the protobuf-java Spark ships), the first message of the
  schema's `.proto` text, or the one `*_SCHEMA_FULL_NAME` names.
- NONE: nothing (no key).

A value in a binary registry format (AVRO, PROTOBUF) that is not a record of the source's
schema (PROTOBUF: of its id), or cannot be read, is skipped by `read` (the decoder logs it to
the `processing` logger), as ksqlDB skips what it cannot deserialize and writes a
processing-log entry.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from strom.registry.wire import frame
from strom.spark.jvm import avro_decode, avro_encode, protobuf_decode, protobuf_encode
from strom.sql import types as ty
from strom.sql.analyzer import Column as SqlColumn
from strom.sql.compiler import column, spark_type
from strom.sql.errors import SqlSemanticError
from strom.sql.formatter import format_type
from strom.sql.metastore import DataSource
from strom.sql.protobuf_records import message_path

__all__ = ["decode", "encode", "read"]

_HEADER_BYTES = 5
"""The magic byte and the schema id before a registry format's payload."""
_TWO_32 = 2**32
_TWO_64 = 2**64
_KAFKA_WIDTHS: dict[ty.SqlType, int] = {ty.INT: 8, ty.BIGINT: 16}
"""Hex digits of the KAFKA format's integers."""
_BINARY = frozenset({"AVRO", "PROTOBUF"})
"""The formats decoded into a record in the JVM (None where a value is not one)."""


def _kafka_type(columns: Sequence[SqlColumn]) -> ty.SqlType:
    if len(columns) != 1:
        raise SqlSemanticError(
            f"The 'KAFKA' format only supports a single field. Got: {len(columns)} columns"
        )
    t = columns[0].type
    if t != ty.STRING and t not in _KAFKA_WIDTHS:
        raise SqlSemanticError(
            f"The 'KAFKA' format does not support {format_type(t)} on Spark yet "
            "(STRING, INTEGER and BIGINT)."
        )
    return t


def _check_delimited(columns: Sequence[SqlColumn]) -> None:
    for c in columns:
        if isinstance(c.type, ty.ArrayType | ty.MapType | ty.StructType):
            kind = type(c.type).__name__.removesuffix("Type").upper()
            raise SqlSemanticError(f"The 'DELIMITED' format does not support type '{kind}'")


def _delimited_field(value: Column) -> Column:
    """A value as a DELIMITED field, as ksqlDB's CSV printer writes it: NULL as nothing, and
    one holding a comma, a double quote or a line break in double quotes, its quotes doubled."""
    text = value.cast("string")
    quoted = F.concat(F.lit('"'), F.replace(text, F.lit('"'), F.lit('""')), F.lit('"'))
    return F.coalesce(F.when(text.rlike('[",\\r\\n]'), quoted).otherwise(text), F.lit(""))


def _upper_fields(text: Column) -> Column:
    """A JSON object's fields as a map of upper-cased names to their JSON text."""
    return F.transform_keys(
        F.from_json(text.cast("string"), "map<string,string>"), lambda k, _: F.upper(k)
    )


def _from_text(text: Column, t: ty.SqlType) -> Column:
    """A JSON field's text (a nested value as JSON text) as a value of `t`; NULL where it is
    not one. TIMESTAMPs are milliseconds since the epoch, DATEs days, BYTES base64 (ksqlDB's
    JSON). A STRUCT's fields are matched in any case, as the top level's (ksqlDB's)."""
    if t == ty.STRING:
        return text
    if t == ty.BYTES:  # base64, as Spark's to_json writes binary and ksqlDB's JSON has it
        return F.try_to_binary(text, F.lit("base64"))
    if isinstance(t, ty.StructType):
        fields = _upper_fields(text)
        inner = [
            _from_text(F.try_element_at(fields, F.lit(f.name.upper())), f.type).alias(f.name)
            for f in t.fields
        ]
        return F.when(fields.isNotNull(), F.struct(*inner))
    if isinstance(t, ty.ArrayType | ty.MapType):
        return F.from_json(text, spark_type(t))
    if t == ty.TIMESTAMP:
        return F.timestamp_millis(text.try_cast("bigint"))
    if t == ty.DATE:
        return F.date_from_unix_date(text.try_cast("int"))
    return text.try_cast(spark_type(t))


def _connect_json(value: Column, t: ty.SqlType) -> Column:
    """A column as Connect's JSON Schema types want it: TIMESTAMPs as epoch milliseconds,
    DATEs as days (nested ones as Spark writes them)."""
    if t == ty.TIMESTAMP:
        return F.unix_millis(value)
    if t == ty.DATE:
        return F.unix_date(value)
    return value


def _struct(columns: Sequence[SqlColumn]) -> ty.StructType:
    return ty.StructType(tuple(ty.StructField(c.name, c.type) for c in columns))


def _record(
    data: Column,
    columns: Sequence[SqlColumn],
    fmt: str,
    *,
    schema: str | None,
    schema_id: int | None,
    topic: str,
    target: str = "value",
    full_name: str | None = None,
    registry: str | None = None,
) -> Column:
    """A binary format's value decoded into a struct (None where it is not a record of the
    schema `schema_id`, whose text is `schema`, or for PROTOBUF not its message `full_name`;
    logged as the `target`, key or value, of a record of `topic`)."""
    if schema is None or schema_id is None:
        raise SqlSemanticError(f"The '{fmt}' format needs a registered schema to read.")
    if fmt == "AVRO":
        return avro_decode(data, schema, schema_id, topic, target, registry=registry)
    ddl = spark_type(_struct(columns))
    message = message_path(schema, full_name)
    return protobuf_decode(data, schema, schema_id, ddl, topic, target=target, message=message)


def _avro_record(schema: str) -> bool:
    """Whether an Avro schema is a record (else a single column's value, unwrapped)."""
    parsed = json.loads(schema)
    return isinstance(parsed, dict) and parsed.get("type") == "record"


def _fields(record: Column, columns: Sequence[SqlColumn], fmt: str, schema: str) -> list[Column]:
    """The columns read from the record's fields (matched by name in any case, as ksqlDB:
    Protobuf's by the JVM decoder, Avro's here, by the writer schema's field names)."""
    if fmt == "PROTOBUF":
        return [record.getField(c.name).alias(c.name) for c in columns]
    if not _avro_record(schema):
        return [record.cast(spark_type(columns[0].type)).alias(columns[0].name)]
    fields = {f["name"].upper(): f["name"] for f in json.loads(schema).get("fields", [])}
    out = []
    for c in columns:
        name = fields.get(c.name.upper())
        value = F.lit(None) if name is None else record.getField(name)
        out.append(value.cast(spark_type(c.type)).alias(c.name))
    return out


def read(frame: DataFrame, source: DataSource) -> tuple[DataFrame, list[Column]]:
    """`frame` (of the source's binary `key` and `value`) without the records whose key or
    value a binary registry format cannot read (skipped, as ksqlDB skips them: the decoder
    writes the processing-log entry), and the source's columns read from what is left."""
    out: list[Column] = []
    parts = (
        (
            "key",
            source.keys,
            source.key_format,
            source.key_schema,
            source.key_schema_id,
            source.key_schema_name,
        ),
        (
            "value",
            source.values,
            source.value_format,
            source.value_schema,
            source.value_schema_id,
            source.value_schema_name,
        ),
    )
    for part, columns, fmt, schema, schema_id, full_name in parts:
        if fmt not in _BINARY or not columns:
            out += decode(frame[part], columns, fmt)
            continue
        hidden = f"__{part.upper()}_RECORD"
        record = _record(
            frame[part],
            columns,
            fmt,
            schema=schema,
            schema_id=schema_id,
            topic=source.topic,
            target=part,
            full_name=full_name,
            registry=source.registry,
        )
        # the decoder is non-deterministic to Spark, so the filter cannot run it a second time
        frame = frame.withColumn(hidden, record)
        frame = frame.where(frame[part].isNull() | F.col(hidden).isNotNull())
        assert schema is not None
        out += _fields(F.col(hidden), columns, fmt, schema)
    return frame, out


def decode(
    data: Column,
    columns: Sequence[SqlColumn],
    fmt: str,
    schema: str | None = None,
    schema_id: int | None = None,
) -> list[Column]:
    """The columns (named as declared) read from the binary `data`; AVRO's and PROTOBUF's
    with the `schema` (text) of the source's registered `schema_id` (a value of another id
    reads as NULLs here: `read` skips it)."""
    if not columns:
        return []
    if fmt in _BINARY:
        record = _record(data, columns, fmt, schema=schema, schema_id=schema_id, topic="")
        assert schema is not None
        return _fields(record, columns, fmt, schema)
    if fmt == "JSON_SR":
        data = F.substring(data, _HEADER_BYTES + 1, 2**31 - 1)
    if fmt in ("JSON", "JSON_SR"):
        fields = _upper_fields(data)
        return [
            _from_text(F.try_element_at(fields, F.lit(c.name.upper())), c.type).alias(c.name)
            for c in columns
        ]
    if fmt == "DELIMITED":
        _check_delimited(columns)
        parts = F.split(data.cast("string"), ",")
        return [
            F.nullif(F.try_element_at(parts, F.lit(i + 1)), F.lit(""))
            .try_cast(spark_type(c.type))
            .alias(c.name)
            for i, c in enumerate(columns)
        ]
    if fmt == "KAFKA":
        t = _kafka_type(columns)
        if t == ty.STRING:
            return [data.cast("string").alias(columns[0].name)]
        unsigned = F.conv(F.hex(data), 16, 10).cast("decimal(20,0)")
        # as decimal text: Py4J passes a Python int as a Java long, and 2**63 is none
        half = F.lit(str(_TWO_32 // 2 if t == ty.INT else _TWO_64 // 2)).cast("decimal(20,0)")
        signed = F.when(unsigned >= half, unsigned - (half * 2)).otherwise(unsigned)
        return [signed.cast(spark_type(t)).alias(columns[0].name)]
    raise SqlSemanticError(f"The {fmt} format holds no columns.")


def encode(
    columns: Sequence[SqlColumn],
    fmt: str,
    schema_id: int | None = None,
    schema: str | None = None,
    full_name: str | None = None,
) -> Column:
    """The binary (or text) the sink writes for `columns` of the current row; a registry
    format's records are framed with `schema_id` (AVRO's and PROTOBUF's written in `schema`,
    its text; PROTOBUF's as its message `full_name`, default the first)."""
    if fmt in _BINARY:
        if schema_id is None or schema is None:
            raise SqlSemanticError(f"The '{fmt}' format needs a registered schema to write.")
        ddl = spark_type(_struct(columns))
        fields = F.struct(*[column(c.name) for c in columns])
        if fmt == "PROTOBUF":
            return protobuf_encode(fields, ddl, schema, schema_id, message_path(schema, full_name))
        if not _avro_record(schema):  # a single key column, unwrapped
            return avro_encode(
                column(columns[0].name), spark_type(columns[0].type), schema, schema_id
            )
        return avro_encode(fields, ddl, schema, schema_id)
    if fmt == "JSON":
        fields = F.struct(*[column(c.name) for c in columns])
        return F.to_json(fields, {"ignoreNullFields": "false"})
    if fmt == "JSON_SR":
        fields = F.struct(*[_connect_json(column(c.name), c.type).alias(c.name) for c in columns])
        text = F.to_json(fields, {"ignoreNullFields": "false"})
        if schema_id is None:
            raise SqlSemanticError("The 'JSON_SR' format needs a registered schema to write.")
        return F.concat(F.lit(frame(schema_id, b"")), F.encode(text, "UTF-8"))
    if fmt == "DELIMITED":
        _check_delimited(columns)
        return F.concat_ws(",", *[_delimited_field(column(c.name)) for c in columns])
    if fmt == "KAFKA":
        t = _kafka_type(columns)
        value = column(columns[0].name)
        if t == ty.STRING:
            return value.cast("string")
        width = _KAFKA_WIDTHS[t]
        digits = F.lpad(F.hex(value.cast("bigint")), 16, "0")
        return F.unhex(F.substring(digits, 17 - width, width))
    raise SqlSemanticError(f"The {fmt} format holds no columns.")
