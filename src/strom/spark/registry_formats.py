"""Values in Confluent's schema-registry wire format (magic byte, schema id, payload) on Spark,
which Spark's own ``from_avro``/``to_avro`` cannot read or write.

Decoding looks each value's writer schema up by id in the registry, on the executors, once per
Python worker (``_codec``), and resolves Avro values into the reader schema (the subject's
latest version unless one is given): a topic holding two compatible versions decodes into one
column type. Encoding registers (or finds) the schema under the subject on the driver, and the
executors frame each value with its id."""

from __future__ import annotations

import json
import threading
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, StringType, StructType

from strom.registry.codec import RegistryCodec
from strom.registry.schema_types import SchemaType
from strom.spark.avro import as_plain_data, avro_type

__all__ = ["decode_registry_value", "encode_registry_value", "registry_codec"]

_HEADER_BYTES = 5  # the magic byte and the schema id (JSON Schema values have no indexes)
_TYPES = {"avro": SchemaType.AVRO, "json": SchemaType.JSON, "protobuf": SchemaType.PROTOBUF}
_codecs: dict[tuple[str, tuple[str, str] | None], RegistryCodec] = {}
_codecs_lock = threading.Lock()


def registry_codec(url: str, auth: tuple[str, str] | None = None) -> RegistryCodec:
    """This process's codec of a registry (driver or Python worker), by its URL and login:
    its schema cache outlives a task."""
    with _codecs_lock:
        codec = _codecs.get((url, auth))
        if codec is None:
            codec = _codecs[url, auth] = RegistryCodec(url, auth=auth)
        return codec


def decode_registry_value(
    data: Column,
    fmt: str,
    *,
    registry: str,
    subject: str | None,
    schema: str | StructType | None,
) -> Column:
    """Framed values to a typed column: ``avro`` (into ``schema``, an Avro schema, else the
    subject's latest); ``json`` with a Spark schema (the JSON after the 5-byte header, parsed
    by Spark's ``from_json`` in the JVM); ``protobuf`` with a Spark schema (each message as
    Protobuf's JSON mapping, with the proto field names, parsed by ``from_json``). Without a
    schema, ``json`` and ``protobuf`` decode to JSON text."""
    if fmt not in _TYPES:
        raise ValueError(f"cannot decode {fmt!r} from a registry: use avro, json or protobuf")
    if fmt == "json" and schema is not None:
        payload = F.substring(data, _HEADER_BYTES + 1, 2**31 - 1).cast("string")
        return F.from_json(payload, schema)
    if fmt != "avro":

        def to_json(value: bytes | None) -> str | None:
            if value is None:
                return None
            return json.dumps(registry_codec(registry).decode(value), separators=(",", ":"))

        text = F.udf(to_json, StringType(), useArrow=False)(data)
        return text if schema is None else F.from_json(text, schema)
    reader = schema if isinstance(schema, str) else None
    if reader is None:
        if subject is None:
            raise ValueError("decoding avro from a registry needs subject= or schema=")
        reader = registry_codec(registry).latest(subject).text

    def decode(value: bytes | None) -> Any:
        if value is None:
            return None
        return registry_codec(registry).decode(value, reader_schema=reader)

    return F.udf(decode, avro_type(reader), useArrow=False)(data)


def encode_registry_value(
    data: Column, fmt: str, *, registry: str, subject: str, schema: str
) -> Column:
    """A column to framed values of ``schema``, registered under ``subject`` (or found there)."""
    if fmt not in _TYPES:
        raise ValueError(f"cannot encode {fmt!r} for a registry: use avro, json or protobuf")
    schema_id = registry_codec(registry).register(subject, _TYPES[fmt], schema)

    def encode(value: Any) -> bytes | None:
        if value is None:
            return None
        return registry_codec(registry).encode(schema_id, as_plain_data(value))

    return F.udf(encode, BinaryType(), useArrow=False)(data)
