"""Decoding and encoding record keys and values: plain strings, JSON and Avro with a schema.

``decode_value(col, "json", schema)`` turns the binary ``value`` column of the source into typed
columns, ``encode_value(col, "json")`` turns a column back into what the sink writes. Strings
and JSON use Spark's own functions; Avro uses :mod:`strom.spark.avro` (fastavro in Python UDFs,
since Spark's JVM Avro module is a separate package); values in a schema registry's wire format
are :mod:`strom.spark.registry_formats`' business.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from strom.spark.avro import from_avro, to_avro

__all__ = ["decode_value", "encode_value"]


def decode_value(
    data: Column,
    fmt: str,
    schema: str | StructType | None = None,
    *,
    registry: str | None = None,
    subject: str | None = None,
) -> Column:
    """Bytes to a column: ``string``, ``json`` (with a Spark schema) or ``avro`` (an Avro
    schema as JSON text). With ``registry`` (a schema registry's URL), values are in Confluent's
    wire format: ``avro`` decodes into ``schema`` or the latest version of ``subject``, ``json``
    and ``protobuf`` into ``schema`` (a Spark schema), or without one to JSON text."""
    if registry is not None:
        from strom.spark import registry_formats  # noqa: PLC0415 - needs strom[registry]

        return registry_formats.decode_registry_value(
            data, fmt, registry=registry, subject=subject, schema=schema
        )
    if fmt == "string":
        return data.cast("string")
    if fmt == "json" and schema is not None:
        return F.from_json(data.cast("string"), schema)
    if fmt == "avro" and isinstance(schema, str):
        return from_avro(data, schema)
    raise ValueError(
        f"cannot decode {fmt!r}: use 'string', 'json' with a schema, or 'avro' with an Avro schema"
    )


def encode_value(
    data: Column,
    fmt: str,
    schema: str | None = None,
    *,
    registry: str | None = None,
    subject: str | None = None,
) -> Column:
    """A column to bytes or text the sink writes: ``string``, ``json`` or ``avro`` (with an Avro
    schema as JSON text). With ``registry`` and ``subject``, ``schema`` is registered there (or
    found) and values are framed with its id (Confluent's wire format)."""
    if registry is not None:
        if subject is None or schema is None:
            raise ValueError("encoding for a registry needs subject= and schema=")
        from strom.spark import registry_formats  # noqa: PLC0415 - needs strom[registry]

        return registry_formats.encode_registry_value(
            data, fmt, registry=registry, subject=subject, schema=schema
        )
    if fmt == "string":
        return data.cast("string")
    if fmt == "json":
        return F.to_json(data)
    if fmt == "avro" and schema is not None:
        return to_avro(data, schema)
    raise ValueError(f"cannot encode {fmt!r}: use 'string', 'json', or 'avro' with an Avro schema")
