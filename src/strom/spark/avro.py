"""Avro on Spark without Spark's JVM Avro package: the Spark type of an Avro schema, and
``from_avro``/``to_avro`` as fastavro Python UDFs that take the same arguments as Spark's and
read and write the same bytes (plain Avro binary, no schema-registry framing). Both value
formats (:mod:`strom.spark.formats`, :mod:`strom.spark.registry_formats`) build on it.
"""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    Row,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

__all__ = ["as_plain_data", "avro_type", "from_avro", "to_avro"]

_PRIMITIVES: dict[str, DataType] = {
    "null": NullType(),
    "boolean": BooleanType(),
    "int": IntegerType(),
    "long": LongType(),
    "float": FloatType(),
    "double": DoubleType(),
    "bytes": BinaryType(),
    "string": StringType(),
}
_LOGICAL: dict[str, DataType] = {
    "date": DateType(),
    "timestamp-millis": TimestampType(),
    "timestamp-micros": TimestampType(),
}


def avro_type(schema: str | dict[str, Any] | list[Any]) -> DataType:
    """The Spark type of the values of an Avro schema (JSON text or parsed)."""
    parsed = json.loads(schema) if isinstance(schema, str) else schema
    return _to_spark(parsed, {})


def _to_spark(schema: Any, named: dict[str, DataType]) -> DataType:
    if isinstance(schema, str):
        if schema in _PRIMITIVES:
            return _PRIMITIVES[schema]
        if schema in named:
            return named[schema]
        raise ValueError(f"unknown Avro type {schema!r}")
    if isinstance(schema, list):
        members = [m for m in schema if m != "null"]
        if len(members) != 1:
            raise ValueError(f"Avro unions other than [null, T] are not supported: {schema}")
        return _to_spark(members[0], named)
    kind = schema["type"]
    logical = schema.get("logicalType")
    if logical in _LOGICAL:
        return _LOGICAL[logical]
    if logical == "decimal":
        return DecimalType(schema["precision"], schema.get("scale", 0))
    result: DataType
    if kind == "record":
        result = StructType()
        named[schema["name"]] = result
        for field in schema["fields"]:
            result.add(StructField(field["name"], _to_spark(field["type"], named)))
    elif kind == "enum":
        result = StringType()
    elif kind == "fixed":
        result = BinaryType()
    elif kind == "array":
        result = ArrayType(_to_spark(schema["items"], named))
    elif kind == "map":
        result = MapType(StringType(), _to_spark(schema["values"], named))
    else:
        return _to_spark(kind, named)
    if "name" in schema:
        named[schema["name"]] = result
    return result


def from_avro(data: Column, jsonFormatSchema: str) -> Column:
    """Avro binary to a typed column (Spark's ``from_avro``)."""
    parsed = fastavro.parse_schema(json.loads(jsonFormatSchema))

    def decode(value: bytes | None) -> Any:
        if value is None:
            return None
        return fastavro.schemaless_reader(io.BytesIO(value), parsed, None)

    return F.udf(decode, avro_type(jsonFormatSchema), useArrow=False)(data)


def to_avro(data: Column, jsonFormatSchema: str) -> Column:
    """A column to Avro binary (Spark's ``to_avro``); nulls stay null."""
    parsed = fastavro.parse_schema(json.loads(jsonFormatSchema))

    def encode(value: Any) -> bytes | None:
        if value is None:
            return None
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, as_plain_data(value))
        return out.getvalue()

    return F.udf(encode, BinaryType(), useArrow=False)(data)


def as_plain_data(value: Any) -> Any:
    """Rows (structs) as dicts, all the way down, as fastavro wants records."""
    if isinstance(value, Row):
        return {k: as_plain_data(v) for k, v in value.asDict().items()}
    if isinstance(value, list):
        return [as_plain_data(v) for v in value]
    if isinstance(value, dict):
        return {k: as_plain_data(v) for k, v in value.items()}
    return value
