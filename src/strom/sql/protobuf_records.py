"""One PROTOBUF record at a time, in Python, where no Spark job runs: `INSERT VALUES` (a
message of the inserted columns) and the materialized state of pull queries (a message's
fields as the JSON formats hold them: TIMESTAMPs epoch milliseconds, DATEs days, DECIMALs
numbers, BYTES base64, enums by name). The first message of the schema's file, as the JVM codec
reads and writes it; Connect's logical types as Confluent's ProtobufData writes them
(`google.protobuf.Timestamp`, `google.type.Date`, `confluent.type.Decimal`)."""

from __future__ import annotations

import base64
import datetime
import decimal
import functools
from collections.abc import Mapping, Sequence
from typing import Any

from strom.registry.wire import frame, message_indexes, read_message_indexes, unframe
from strom.sql.analyzer import Column
from strom.sql.protobuf_schemas import no_message

__all__ = ["decode_protobuf", "encode_protobuf", "message_path"]


@functools.lru_cache(maxsize=64)
def _message(schema: str, full_name: str | None) -> tuple[Any, tuple[int, ...]]:
    """The class of the first message of a `.proto` text (or of the message `full_name`), in
    a pool of its own, and its message indexes (its place in the file, as the wire has it)."""
    from google.protobuf import descriptor_pool, message_factory  # noqa: PLC0415

    from strom.registry.protobuf_schema import file_set  # noqa: PLC0415 - strom[registry]

    pool = descriptor_pool.DescriptorPool()
    files = file_set(schema).file
    for file in files:
        pool.Add(file)
    main = files[-1]
    if full_name is None:
        full_name = f"{main.package}.{main.message_type[0].name}".lstrip(".")
    path = _path(main.message_type, main.package, full_name)
    if path is None:
        raise no_message(full_name)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(full_name)), path


def _path(messages: Any, prefix: str, full_name: str) -> tuple[int, ...] | None:
    """The indexes of `full_name` among `messages` (and their nested ones), or None."""
    for i, message in enumerate(messages):
        name = f"{prefix}.{message.name}".lstrip(".")
        if name == full_name:
            return (i,)
        inner = _path(message.nested_type, name, full_name)
        if inner is not None:
            return (i, *inner)
    return None


def message_path(schema: str, full_name: str | None) -> tuple[int, ...]:
    """The message indexes of the message records are read and written as."""
    return _message(schema, full_name)[1]


def encode_protobuf(
    columns: Sequence[Column],
    values: Mapping[str, object],
    schema: str,
    schema_id: int,
    full_name: str | None = None,
) -> bytes:
    """The framed message of `columns`' inserted values (fields matched by name in any case;
    NULLs left unset)."""
    message_class, path = _message(schema, full_name)
    message = message_class()
    fields = {f.name.upper(): f.name for f in message.DESCRIPTOR.fields}
    for c in columns:
        value, name = values.get(c.name), fields.get(c.name.upper())
        if value is None or name is None:
            continue
        field = message.DESCRIPTOR.fields_by_name[name]
        if field.message_type is None or field.is_repeated:
            setattr(message, name, value)
        else:
            _set_message(getattr(message, name), value, c)
    return frame(schema_id, message_indexes(list(path)) + message.SerializeToString())


_EPOCH = datetime.date(1970, 1, 1)


def _set_message(target: Any, value: object, column: Column) -> None:
    """An inserted value into a well-known message field (TIMESTAMP: epoch ms; DATE: days)."""
    name = target.DESCRIPTOR.full_name
    if name == "google.protobuf.Timestamp" and isinstance(value, int):
        target.FromMilliseconds(value)
    elif name == "google.type.Date" and isinstance(value, int):
        day = _EPOCH + datetime.timedelta(days=value)
        target.year, target.month, target.day = day.year, day.month, day.day
    elif name == "confluent.type.Decimal" and isinstance(value, int | float | decimal.Decimal):
        scale = getattr(column.type, "scale", 0)
        exact = decimal.Decimal(str(value)).quantize(decimal.Decimal(1).scaleb(-scale))
        unscaled = int(exact.scaleb(scale))
        target.value = unscaled.to_bytes((unscaled.bit_length() + 8) // 8, "big", signed=True)
        target.precision, target.scale = len(exact.as_tuple().digits), scale
    elif name.startswith("google.protobuf.") and name.endswith("Value"):
        target.value = value
    else:
        raise ValueError(f"a value of {column.name} cannot be written as a {name}")


def decode_protobuf(
    columns: Sequence[Column], data: bytes, schema: str, full_name: str | None = None
) -> dict[str, object]:
    """The columns of a framed message (none where it is not one of the schema's message)."""
    message_class, path = _message(schema, full_name)
    try:
        indexes, payload = read_message_indexes(unframe(data)[1])
        if tuple(indexes) != path:
            return {}
        message = message_class.FromString(bytes(payload))
    except ValueError:  # not framed, or protobuf's DecodeError (a ValueError too)
        return {}
    fields = {f.name.upper(): f for f in message.DESCRIPTOR.fields}
    out: dict[str, object] = {}
    for c in columns:
        field = fields.get(c.name.upper())
        out[c.name] = None if field is None else _field(message, field)
    return out


def _field(message: Any, field: Any) -> object:
    if field.has_presence and not message.HasField(field.name):
        return None
    value = getattr(message, field.name)
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        entry = field.message_type.fields_by_name["value"]
        return {k: _value(entry, v) for k, v in value.items()}
    if field.is_repeated:
        return [_value(field, v) for v in value]
    return _value(field, value)


def _value(field: Any, value: Any) -> object:
    if field.enum_type is not None:
        known = field.enum_type.values_by_number.get(value)
        return value if known is None else known.name
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if field.message_type is None:
        return value
    name = field.message_type.full_name
    if name == "google.protobuf.Timestamp":
        return int(value.seconds * 1000 + value.nanos // 1_000_000)
    if name == "google.type.Date":
        return (datetime.date(value.year, value.month, value.day) - _EPOCH).days
    if name == "confluent.type.Decimal":
        unscaled = int.from_bytes(value.value, "big", signed=True)
        return float(decimal.Decimal(unscaled).scaleb(-value.scale))
    if name.startswith("google.protobuf.") and name.endswith("Value"):
        return _value(field.message_type.fields_by_name["value"], value.value)
    return {f.name: _field(value, f) for f in field.message_type.fields}
