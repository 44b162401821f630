"""Records in Python, in the formats the planner reads and writes on Spark: `encode_insert` makes
the record of `INSERT INTO source (columns) VALUES (...)` (ksqlDB's `InsertValuesExecutor`; the
key and value bytes, and the timestamp when ROWTIME is given), `decode_record` reads a record
of a table's topic for a pull query. Pure."""

from __future__ import annotations

import base64
import datetime
import decimal
import io
import json
import struct
from collections.abc import Sequence
from typing import Any

from strom.registry.wire import frame, unframe
from strom.sql import expressions as ex
from strom.sql import statements as st
from strom.sql import types as ty
from strom.sql.analyzer import Column
from strom.sql.errors import SqlSemanticError
from strom.sql.formatter import format_expression
from strom.sql.metastore import DataSource
from strom.sql.protobuf_records import decode_protobuf, encode_protobuf

__all__ = ["Record", "decode_record", "encode_insert"]

Record = tuple[bytes | None, bytes | None, int | None]
"""Key, value, timestamp (None: the producer's clock)."""


def _literal(e: ex.Expression) -> object:
    match e:
        case ex.NullLiteral():
            return None
        case ex.StringLiteral(v) | ex.BooleanLiteral(v) | ex.IntegerLiteral(v):
            return v
        case ex.DoubleLiteral(v):
            return v
        case ex.DecimalLiteral(v):
            return v
        case ex.Unary("-", operand):
            value = _literal(operand)
            if isinstance(value, int | float | decimal.Decimal) and not isinstance(value, bool):
                return -value
    raise SqlSemanticError(
        f"Only literals can be inserted with VALUES, not {format_expression(e)}."
    )


def _coerce(column: Column, value: object) -> object:
    """`value` as `column`'s type takes it, or an error naming both."""
    t = column.type
    if value is None:
        return None
    if t in (ty.INT, ty.BIGINT) and isinstance(value, int) and not isinstance(value, bool):
        return value
    if t == ty.DOUBLE and isinstance(value, int | float | decimal.Decimal):
        return float(value)
    if isinstance(t, ty.DecimalType) and isinstance(value, int | decimal.Decimal):
        return float(value)
    if t == ty.STRING and isinstance(value, str):
        return value
    if t == ty.BOOLEAN and isinstance(value, bool):
        return value
    raise SqlSemanticError(
        f"Expected type {t.primitive.value if isinstance(t, ty.PrimitiveType) else t} for field "
        f"{column.name} but got {value!r}"
    )


def _avro(schema: str | None) -> Any:
    import fastavro  # noqa: PLC0415 - strom[registry]

    if schema is None:
        raise SqlSemanticError("The 'AVRO' format needs a registered schema.")
    return fastavro.parse_schema(json.loads(schema))


def _encode(
    columns: Sequence[Column],
    values: dict[str, object],
    fmt: str,
    schema_id: int | None,
    *,
    schema: str | None = None,
    full_name: str | None = None,
) -> bytes | None:
    if not columns:
        return None
    if fmt == "PROTOBUF":
        if schema is None or schema_id is None:
            raise SqlSemanticError("The 'PROTOBUF' format needs a registered schema to write.")
        return encode_protobuf(columns, values, schema, schema_id, full_name)
    if fmt == "AVRO":
        import fastavro  # noqa: PLC0415

        parsed = _avro(schema)
        upper = {c.name.upper(): values.get(c.name) for c in columns}
        record: object = values.get(columns[0].name)  # a single key column, unwrapped
        if isinstance(parsed, dict) and parsed.get("type") == "record":
            record = {f["name"]: upper.get(f["name"].upper()) for f in parsed["fields"]}
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, record)  # fields by name in any case, as read
        assert schema_id is not None
        return frame(schema_id, out.getvalue())
    if fmt in ("JSON", "JSON_SR"):
        payload = json.dumps(
            {c.name: values.get(c.name) for c in columns}, separators=(",", ":")
        ).encode()
        if fmt == "JSON":
            return payload
        if schema_id is None:
            raise SqlSemanticError(f"The '{fmt}' format needs a registered schema to write.")
        return frame(schema_id, payload)
    if fmt == "DELIMITED":
        text = ",".join("" if values.get(c.name) is None else str(values[c.name]) for c in columns)
        return text.encode()
    value = values.get(columns[0].name)
    if value is None:
        return None
    if columns[0].type == ty.INT:
        return struct.pack(">i", value)
    if columns[0].type == ty.BIGINT:
        return struct.pack(">q", value)
    return str(value).encode()


def encode_insert(source: DataSource, s: st.InsertValues) -> Record:
    """The record `s` inserts into `source`."""
    names = list(s.columns) or [c.name for c in source.columns]
    if len(names) != len(s.values):
        raise SqlSemanticError(
            f"Expected a value for each column. Expected Columns: {names}. "
            f"Got {[format_expression(v) for v in s.values]}"
        )
    given: dict[str, object] = {}
    timestamp = None
    for name, e in zip(names, s.values, strict=True):
        value = _literal(e)
        if name == "ROWTIME":
            timestamp = _coerce(Column("ROWTIME", ty.BIGINT), value)
            continue
        column = source.schema.column(name)
        if column is None:
            raise SqlSemanticError(f"Column name {name} does not exist.")
        given[name] = _coerce(column, value)
    key = _encode(
        source.keys,
        given,
        source.key_format,
        source.key_schema_id,
        schema=source.key_schema,
        full_name=source.key_schema_name,
    )
    value_bytes = _encode(
        source.values,
        given,
        source.value_format,
        source.value_schema_id,
        schema=source.value_schema,
        full_name=source.value_schema_name,
    )
    return key, value_bytes, timestamp if isinstance(timestamp, int) else None


def _from_text(text: str | None, t: ty.SqlType) -> object:
    if text is None or text == "":
        return None
    try:
        if t in (ty.INT, ty.BIGINT):
            return int(text)
        if t == ty.DOUBLE or isinstance(t, ty.DecimalType):
            return float(text)
        if t == ty.BOOLEAN:
            return text.strip().lower() == "true"
    except ValueError:
        return None
    return text


def _as_json(value: object) -> object:
    """fastavro's logical values as the JSON formats hold them: TIMESTAMPs epoch milliseconds,
    DATEs days, DECIMALs numbers, BYTES base64."""
    if isinstance(value, dict):
        return {k: _as_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_json(v) for v in value]
    if isinstance(value, datetime.datetime):
        return round(value.timestamp() * 1000)
    if isinstance(value, datetime.date):
        return (value - datetime.date(1970, 1, 1)).days
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    return value


def _decode(
    columns: Sequence[Column],
    data: bytes | None,
    fmt: str,
    schema: str | None = None,
    full_name: str | None = None,
) -> dict[str, object]:
    if not columns or data is None:
        return {}
    if fmt == "PROTOBUF":
        return {} if schema is None else decode_protobuf(columns, data, schema, full_name)
    if fmt == "AVRO":
        import fastavro  # noqa: PLC0415

        try:
            payload = io.BytesIO(bytes(unframe(data)[1]))
            record = fastavro.schemaless_reader(payload, _avro(schema), None)
        except (ValueError, EOFError, IndexError):  # not a framed Avro record: no columns
            return {}
        plain = _as_json(record)
        if not isinstance(_avro(schema), dict) or _avro(schema).get("type") != "record":
            return {columns[0].name: plain}  # a single key column, unwrapped
        upper = {str(k).upper(): v for k, v in plain.items()} if isinstance(plain, dict) else {}
        return {c.name: upper.get(c.name.upper()) for c in columns}
    if fmt in ("JSON", "JSON_SR"):
        try:
            fields = json.loads(bytes(unframe(data)[1]) if fmt == "JSON_SR" else data)
        except ValueError:
            return {}
        if not isinstance(fields, dict):
            return {}
        upper = {str(k).upper(): v for k, v in fields.items()}
        return {c.name: upper.get(c.name.upper()) for c in columns}
    if fmt == "DELIMITED":
        parts = data.decode(errors="replace").split(",")
        return {
            c.name: _from_text(parts[i] if i < len(parts) else None, c.type)
            for i, c in enumerate(columns)
        }
    t = columns[0].type
    if t == ty.INT and len(data) == 4:
        return {columns[0].name: struct.unpack(">i", data)[0]}
    if t == ty.BIGINT and len(data) == 8:
        return {columns[0].name: struct.unpack(">q", data)[0]}
    return {columns[0].name: data.decode(errors="replace")}


def decode_record(source: DataSource, key: bytes | None, value: bytes | None) -> dict[str, object]:
    """A record's columns by name (its key's and its value's), as the planner's formats read."""
    return {
        **_decode(source.keys, key, source.key_format, source.key_schema, source.key_schema_name),
        **_decode(
            source.values,
            value,
            source.value_format,
            source.value_schema,
            source.value_schema_name,
        ),
    }
