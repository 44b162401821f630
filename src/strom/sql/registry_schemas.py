"""SQL columns <-> the schemas of the registry formats (ksqlDB's `JSON_SR` and `AVRO`). Pure.

`json_schema` writes the JSON Schema ksqlDB registers for a sink: what Confluent's
JsonSchemaConverter makes of the Connect schema of the columns (an object of optional fields,
each a `oneOf` of null and the field's type, with `connect.index` and `connect.type`, and
Connect's logical types named by `title`). `json_columns` reads a registered JSON Schema back
as columns, as ksqlDB infers a source's columns when a `CREATE` gives none.

`avro_schema` writes the Avro record ksqlDB registers (`KsqlDataSourceSchema` in the namespace
`io.confluent.ksql.avro_schemas`, every field a union with null defaulting to null, nested
records named after their field) and `avro_columns` reads a registered Avro record back.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from strom.sql import types as ty
from strom.sql.analyzer import Column
from strom.sql.errors import SqlSemanticError

__all__ = [
    "REGISTRY_FORMATS",
    "avro_columns",
    "avro_key_schema",
    "avro_schema",
    "json_columns",
    "json_schema",
]

REGISTRY_FORMATS = frozenset({"JSON_SR", "AVRO", "PROTOBUF"})
"""The formats whose records are framed with a schema id of `ksql.schema.registry.url`."""

_CONNECT = "org.apache.kafka.connect.data."
_PRIMITIVES: dict[ty.SqlType, dict[str, Any]] = {
    ty.BOOLEAN: {"type": "boolean"},
    ty.INT: {"type": "integer", "connect.type": "int32"},
    ty.BIGINT: {"type": "integer", "connect.type": "int64"},
    ty.DOUBLE: {"type": "number", "connect.type": "float64"},
    ty.STRING: {"type": "string"},
    ty.BYTES: {"type": "string", "connect.type": "bytes"},
    **{
        t: {
            "type": "integer",
            "title": _CONNECT + name,
            "connect.version": 1,
            "connect.type": "int64" if t == ty.TIMESTAMP else "int32",
        }
        for t, name in ((ty.DATE, "Date"), (ty.TIME, "Time"), (ty.TIMESTAMP, "Timestamp"))
    },
}
_LOGICAL = {
    _CONNECT + "Date": ty.DATE,
    _CONNECT + "Time": ty.TIME,
    _CONNECT + "Timestamp": ty.TIMESTAMP,
}


def _optional(schema: dict[str, Any]) -> dict[str, Any]:
    return {"oneOf": [{"type": "null"}, schema]}


def _json_type(t: ty.SqlType) -> dict[str, Any]:
    if t in _PRIMITIVES:
        return dict(_PRIMITIVES[t])
    if isinstance(t, ty.DecimalType):
        parameters = {"scale": str(t.scale), "connect.decimal.precision": str(t.precision)}
        return {
            "type": "number",
            "title": _CONNECT + "Decimal",
            "connect.version": 1,
            "connect.parameters": parameters,
        }
    if isinstance(t, ty.ArrayType):
        return {"type": "array", "items": _optional(_json_type(t.element))}
    if isinstance(t, ty.MapType):
        if t.key != ty.STRING:
            raise SqlSemanticError("The 'JSON_SR' format only supports MAP types with STRING keys")
        return {
            "type": "object",
            "additionalProperties": _optional(_json_type(t.value)),
            "connect.type": "map",
        }
    assert isinstance(t, ty.StructType)
    return _object([(f.name, f.type) for f in t.fields])


def _object(fields: Sequence[tuple[str, ty.SqlType]]) -> dict[str, Any]:
    properties = {
        name: {"connect.index": i, **_optional(_json_type(t))} for i, (name, t) in enumerate(fields)
    }
    return {"type": "object", "properties": properties}


def json_schema(columns: Sequence[Column]) -> str:
    """The JSON Schema (text) of a record holding `columns`, as ksqlDB registers it."""
    return json.dumps(_object([(c.name, c.type) for c in columns]), separators=(",", ":"))


def _unsupported(schema: object) -> SqlSemanticError:
    return SqlSemanticError(f"Unsupported JSON schema type: {json.dumps(schema)}")


def _sql_type(schema: Any) -> ty.SqlType:
    if not isinstance(schema, dict):
        raise _unsupported(schema)
    for union in ("oneOf", "anyOf"):
        if union in schema:
            members = [m for m in schema[union] if m != {"type": "null"}]
            if len(members) != 1:
                raise _unsupported(schema)
            return _sql_type(members[0])
    kind = schema.get("type")
    if isinstance(kind, list):  # {"type": ["null", "string"]}
        members = [k for k in kind if k != "null"]
        if len(members) != 1:
            raise _unsupported(schema)
        return _sql_type({**schema, "type": members[0]})
    title = schema.get("title")
    if title in _LOGICAL:
        return _LOGICAL[title]
    if title == _CONNECT + "Decimal":
        parameters = schema.get("connect.parameters", {})
        return ty.DecimalType(
            int(parameters.get("connect.decimal.precision", 64)), int(parameters.get("scale", 0))
        )
    connect = schema.get("connect.type")
    match kind:
        case "boolean":
            return ty.BOOLEAN
        case "integer":
            return ty.INT if connect in ("int8", "int16", "int32") else ty.BIGINT
        case "number":
            return ty.DOUBLE
        case "string":
            return ty.BYTES if connect == "bytes" else ty.STRING
        case "array":
            return ty.ArrayType(_sql_type(schema.get("items", {"type": "string"})))
        case "object" if "properties" in schema:
            return ty.StructType(tuple(ty.StructField(n, t) for n, t in _fields(schema)))
        case "object":
            values = schema.get("additionalProperties", {"type": "string"})
            return ty.MapType(ty.STRING, _sql_type(values))
    raise _unsupported(schema)


def _fields(schema: dict[str, Any]) -> list[tuple[str, ty.SqlType]]:
    properties = schema.get("properties", {})
    ordered = sorted(properties.items(), key=lambda p: p[1].get("connect.index", 0))
    return [(name, _sql_type(field)) for name, field in ordered]


def json_columns(text: str) -> tuple[Column, ...]:
    """The value columns of a registered JSON Schema (an object's properties, in their
    `connect.index` order, upper-cased as ksqlDB names inferred columns)."""
    schema = json.loads(text)
    if not isinstance(schema, dict) or "properties" not in schema:
        raise SqlSemanticError(
            f"The JSON schema is not an object with properties, which ksqlDB reads as the "
            f"columns of a record: {text}"
        )
    return tuple(Column(name.upper(), t) for name, t in _fields(schema))


_AVRO_NAME = "KsqlDataSourceSchema"
_AVRO_NAMESPACE = "io.confluent.ksql.avro_schemas"
_AVRO_PRIMITIVES: dict[ty.SqlType, Any] = {
    ty.BOOLEAN: "boolean",
    ty.INT: "int",
    ty.BIGINT: "long",
    ty.DOUBLE: "double",
    ty.STRING: "string",
    ty.BYTES: "bytes",
    ty.DATE: {
        "type": "int",
        "connect.version": 1,
        "connect.name": _CONNECT + "Date",
        "logicalType": "date",
    },
    ty.TIME: {
        "type": "int",
        "connect.version": 1,
        "connect.name": _CONNECT + "Time",
        "logicalType": "time-millis",
    },
    ty.TIMESTAMP: {
        "type": "long",
        "connect.version": 1,
        "connect.name": _CONNECT + "Timestamp",
        "logicalType": "timestamp-millis",
    },
}
_AVRO_LOGICAL = {"date": ty.DATE, "time-millis": ty.TIME, "timestamp-millis": ty.TIMESTAMP}


def _avro_type(t: ty.SqlType, name: str, namespace: str = _AVRO_NAMESPACE) -> Any:
    if t in _AVRO_PRIMITIVES:
        return _AVRO_PRIMITIVES[t]
    if isinstance(t, ty.DecimalType):
        return {
            "type": "bytes",
            "scale": t.scale,
            "precision": t.precision,
            "connect.version": 1,
            "connect.parameters": {
                "scale": str(t.scale),
                "connect.decimal.precision": str(t.precision),
            },
            "connect.name": _CONNECT + "Decimal",
            "logicalType": "decimal",
        }
    if isinstance(t, ty.ArrayType):
        return {"type": "array", "items": ["null", _avro_type(t.element, name, namespace)]}
    if isinstance(t, ty.MapType):
        if t.key != ty.STRING:
            raise SqlSemanticError("The 'AVRO' format only supports MAP types with STRING keys")
        return {"type": "map", "values": ["null", _avro_type(t.value, name, namespace)]}
    assert isinstance(t, ty.StructType)
    return _record(name, [(f.name, f.type) for f in t.fields], namespace)


def _record(name: str, fields: Sequence[tuple[str, ty.SqlType]], namespace: str) -> dict[str, Any]:
    """A record and its nested ones in `namespace` (empty: none)."""
    return {
        "type": "record",
        "name": name,
        **({"namespace": namespace} if namespace else {}),
        "fields": [
            {
                "name": f,
                "type": ["null", _avro_type(t, f"{name}_{f}", namespace)],
                "default": None,
            }
            for f, t in fields
        ],
    }


def avro_schema(columns: Sequence[Column], full_name: str | None = None) -> str:
    """The Avro schema (text) of a record holding `columns`, as ksqlDB registers it; named
    `full_name` (`VALUE_SCHEMA_FULL_NAME`: its namespace before the last dot) when given."""
    namespace, name = _AVRO_NAMESPACE, _AVRO_NAME
    if full_name is not None:
        namespace, _, name = full_name.rpartition(".")
    record = _record(name, [(c.name, c.type) for c in columns], namespace)
    return json.dumps(record, separators=(",", ":"))


def avro_key_schema(columns: Sequence[Column], full_name: str | None = None) -> str:
    """The Avro schema ksqlDB registers for key `columns`: one column unwrapped (its own type,
    as ksqlDB serializes a single key column), several as a record (named `full_name`)."""
    if len(columns) != 1:
        return avro_schema(columns, full_name)
    return json.dumps(_avro_type(columns[0].type, _AVRO_NAME), separators=(",", ":"))


def _unsupported_avro(schema: object) -> SqlSemanticError:
    return SqlSemanticError(f"Unsupported Avro schema type: {json.dumps(schema)}")


def _avro_sql_type(schema: Any, named: dict[str, ty.SqlType]) -> ty.SqlType:
    if isinstance(schema, list):  # a union: only [null, T] is a column
        members = [m for m in schema if m != "null"]
        if len(members) != 1:
            raise _unsupported_avro(schema)
        return _avro_sql_type(members[0], named)
    if isinstance(schema, str):
        schema = {"type": schema}
    if not isinstance(schema, dict):
        raise _unsupported_avro(schema)
    kind, logical = schema.get("type"), schema.get("logicalType")
    if logical in _AVRO_LOGICAL:
        return _AVRO_LOGICAL[logical]
    if logical == "decimal":
        return ty.DecimalType(int(schema["precision"]), int(schema.get("scale", 0)))
    match kind:
        case "boolean":
            return ty.BOOLEAN
        case "int":
            return ty.INT
        case "long":
            return ty.BIGINT
        case "float" | "double":
            return ty.DOUBLE
        case "string" | "enum":
            return ty.STRING
        case "bytes" | "fixed":
            return ty.BYTES
        case "array":
            return ty.ArrayType(_avro_sql_type(schema["items"], named))
        case "map":
            return ty.MapType(ty.STRING, _avro_sql_type(schema["values"], named))
        case "record":
            result = ty.StructType(
                tuple(
                    ty.StructField(f["name"], _avro_sql_type(f["type"], named))
                    for f in schema["fields"]
                )
            )
            named[schema["name"]] = result
            return result
        case str() if kind in named:
            return named[kind]
        case dict() | list():
            return _avro_sql_type(kind, named)
    raise _unsupported_avro(schema)


def avro_columns(text: str) -> tuple[Column, ...]:
    """The value columns of a registered Avro record (its fields, upper-cased as ksqlDB
    names inferred columns)."""
    schema = json.loads(text)
    if not isinstance(schema, dict) or schema.get("type") != "record":
        raise SqlSemanticError(
            f"The Avro schema is not a record, whose fields ksqlDB reads as the columns: {text}"
        )
    record = _avro_sql_type(schema, {})
    assert isinstance(record, ty.StructType)
    return tuple(Column(f.name.upper(), f.type) for f in record.fields)
