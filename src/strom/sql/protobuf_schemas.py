"""SQL columns <-> Protobuf schemas (ksqlDB's `PROTOBUF` format). Pure.

`protobuf_schema` writes the `.proto` ksqlDB registers for a sink: what Confluent's
ProtobufConverter makes of the Connect schema of the columns, a proto3 message
`ConnectDefault1` with a field per column numbered in order, nested STRUCTs as messages
`ConnectDefault2`, `ConnectDefault3` ... inside it, ARRAYs `repeated`, MAPs `map<K, V>`, and
Connect's logical types as ProtobufData writes them: TIMESTAMPs `google.protobuf.Timestamp`,
DATEs `google.type.Date`, TIMEs `google.type.TimeOfDay`, DECIMALs `confluent.type.Decimal` with
the precision and scale as `confluent.field_meta` params. `protobuf_columns` reads the first
message of a registered file back as columns, with Connect's type mapping (unsigned 32-bit
integers widen to BIGINT, floats to DOUBLE, enums are STRINGs, the wrappers their wrapped type).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from strom.sql import types as ty
from strom.sql.analyzer import Column
from strom.sql.errors import SqlSemanticError
from strom.sql.formatter import format_type

if TYPE_CHECKING:
    from google.protobuf.descriptor_pb2 import DescriptorProto, FileDescriptorProto

__all__ = ["no_message", "protobuf_columns", "protobuf_schema"]

_TIMESTAMP = "google.protobuf.Timestamp"
_DECIMAL = "confluent.type.Decimal"
_FIELD_META = "confluent.field_meta"
_LOGICAL: dict[ty.SqlType, tuple[str, str]] = {
    ty.TIMESTAMP: (_TIMESTAMP, "google/protobuf/timestamp.proto"),
    ty.DATE: ("google.type.Date", "google/type/date.proto"),
    ty.TIME: ("google.type.TimeOfDay", "google/type/timeofday.proto"),
}
"""Connect's logical types: the message each is written as, and the file that declares it."""
_SCALARS: dict[ty.SqlType, str] = {
    ty.BOOLEAN: "bool",
    ty.INT: "int32",
    ty.BIGINT: "int64",
    ty.DOUBLE: "double",
    ty.STRING: "string",
    ty.BYTES: "bytes",
}
_MAP_KEYS = frozenset({ty.STRING, ty.INT, ty.BIGINT, ty.BOOLEAN})
"""The SQL types a Protobuf map key can be."""


def _unsupported(t: ty.SqlType, why: str) -> SqlSemanticError:
    return SqlSemanticError(
        f"The 'PROTOBUF' format does not support type '{format_type(t)}': {why}"
    )


class _Writer:
    """One `.proto` file being written: the ConnectDefault numbering and the imports."""

    def __init__(self) -> None:
        self.names = (f"ConnectDefault{n}" for n in itertools.count(1))
        self.imports: set[str] = set()

    def message(
        self, fields: Sequence[tuple[str, ty.SqlType]], depth: int, name: str | None = None
    ) -> list[str]:
        pad = "  " * depth
        name = name or next(self.names)
        lines, nested = [f"{pad}message {name} {{"], list[list[str]]()
        for number, (field, t) in enumerate(fields, 1):
            kind = self.field_type(t, nested, depth + 1)
            lines.append(f"{pad}  {kind} {field} = {number}{self.options(t)};")
        for block in nested:
            lines += ["", *block]
        return [*lines, f"{pad}}}"]

    def options(self, t: ty.SqlType) -> str:
        """A DECIMAL's precision and scale, where Confluent's ProtobufData keeps them."""
        if isinstance(t, ty.ArrayType):
            return self.options(t.element)
        if not isinstance(t, ty.DecimalType):
            return ""
        self.imports.add("confluent/meta.proto")
        params = f'{{ key: "precision", value: "{t.precision}" }}, '
        params += f'{{ key: "scale", value: "{t.scale}" }}'
        return f" [({_FIELD_META}) = {{ params: [{params}] }}]"

    def field_type(self, t: ty.SqlType, nested: list[list[str]], depth: int) -> str:
        if isinstance(t, ty.ArrayType):
            if isinstance(t.element, ty.ArrayType | ty.MapType):
                raise _unsupported(t, "a repeated field cannot hold arrays or maps")
            return "repeated " + self.field_type(t.element, nested, depth)
        if isinstance(t, ty.MapType):
            if t.key not in _MAP_KEYS:
                raise _unsupported(t, "map keys are STRING, INTEGER, BIGINT or BOOLEAN")
            if isinstance(t.value, ty.ArrayType | ty.MapType):
                raise _unsupported(t, "a map's values cannot be arrays or maps")
            value = self.field_type(t.value, nested, depth)
            return f"map<{_SCALARS[t.key]}, {value}>"
        if isinstance(t, ty.StructType):
            block = self.message([(f.name, f.type) for f in t.fields], depth)
            nested.append(block)
            return block[0].split()[1]
        if isinstance(t, ty.DecimalType):
            self.imports.add("confluent/type/decimal.proto")
            return _DECIMAL
        if t in _LOGICAL:
            name, file = _LOGICAL[t]
            self.imports.add(file)
            return name
        if t not in _SCALARS:
            raise _unsupported(t, "not written by strom's PROTOBUF format yet")
        return _SCALARS[t]


def protobuf_schema(columns: Sequence[Column], full_name: str | None = None) -> str:
    """The `.proto` text of a message holding `columns`, as ksqlDB registers it; with
    `full_name` (`VALUE_SCHEMA_FULL_NAME`), the message is its last part, in the package
    before it (nested messages numbered from ConnectDefault1, as ProtobufData names them)."""
    package, _, name = (full_name or "").rpartition(".")
    writer = _Writer()
    body = writer.message([(c.name, c.type) for c in columns], 0, name or None)
    head = ['syntax = "proto3";', ""]
    if package:
        head += [f"package {package};", ""]
    if writer.imports:
        head += [*(f'import "{name}";' for name in sorted(writer.imports)), ""]
    return "\n".join([*head, *body]) + "\n"


# FieldDescriptorProto.Type's numbers (descriptor.proto): the scalars as Connect reads them
_PROTO_SCALARS: dict[int, ty.SqlType] = {
    1: ty.DOUBLE,  # double
    2: ty.DOUBLE,  # float
    3: ty.BIGINT,  # int64
    4: ty.BIGINT,  # uint64
    5: ty.INT,  # int32
    6: ty.BIGINT,  # fixed64
    7: ty.BIGINT,  # fixed32
    8: ty.BOOLEAN,
    9: ty.STRING,
    12: ty.BYTES,
    13: ty.BIGINT,  # uint32
    14: ty.STRING,  # enum, by name
    15: ty.INT,  # sfixed32
    16: ty.BIGINT,  # sfixed64
    17: ty.INT,  # sint32
    18: ty.BIGINT,  # sint64
}
_MESSAGE = 11
_REPEATED = 3
_WELL_KNOWN: dict[str, ty.SqlType] = {
    **{f".{name}": t for t, (name, _file) in _LOGICAL.items()},
    **{
        f".google.protobuf.{name}Value": t
        for name, t in (
            ("Double", ty.DOUBLE),
            ("Float", ty.DOUBLE),
            ("Int64", ty.BIGINT),
            ("UInt64", ty.BIGINT),
            ("Int32", ty.INT),
            ("UInt32", ty.BIGINT),
            ("Bool", ty.BOOLEAN),
            ("String", ty.STRING),
            ("Bytes", ty.BYTES),
        )
    },
}


_MAX_PRECISION = 38
"""A Decimal field without a precision param (Connect's: none) reads as the widest DECIMAL."""


def _decimal(field: Any) -> ty.DecimalType:
    """A `confluent.type.Decimal` field's type, from its `confluent.field_meta` params."""
    params: dict[str, str] = {}
    for option, value in field.options.ListFields():
        if option.full_name == _FIELD_META:
            params = dict(value.params)
    return ty.DecimalType(int(params.get("precision", _MAX_PRECISION)), int(params.get("scale", 0)))


def _messages(prefix: str, messages: Sequence[DescriptorProto]) -> Iterator[tuple[str, Any]]:
    for message in messages:
        name = f"{prefix}.{message.name}"
        yield name, message
        yield from _messages(name, message.nested_type)


def _struct(message: Any, known: dict[str, Any], seen: tuple[str, ...]) -> ty.StructType:
    return ty.StructType(
        tuple(ty.StructField(f.name, _field_type(f, known, seen)) for f in message.field)
    )


def _field_type(field: Any, known: dict[str, Any], seen: tuple[str, ...]) -> ty.SqlType:
    if field.type != _MESSAGE:
        t = _PROTO_SCALARS.get(field.type)
        if t is None:
            raise SqlSemanticError(f"Unsupported Protobuf type of field '{field.name}' (a group)")
    elif field.type_name in _WELL_KNOWN:
        t = _WELL_KNOWN[field.type_name]
    elif field.type_name == f".{_DECIMAL}":
        t = _decimal(field)
    elif field.type_name not in known:
        raise SqlSemanticError(
            f"Unsupported Protobuf type of field '{field.name}': {field.type_name.lstrip('.')}"
        )
    elif known[field.type_name].options.map_entry:
        key, value = known[field.type_name].field
        return ty.MapType(_field_type(key, known, seen), _field_type(value, known, seen))
    elif field.type_name in seen:
        raise SqlSemanticError(
            f"Unsupported Protobuf schema: message {field.type_name.lstrip('.')} is recursive"
        )
    else:
        t = _struct(known[field.type_name], known, (*seen, field.type_name))
    return ty.ArrayType(t) if field.label == _REPEATED else t


def protobuf_columns(file: FileDescriptorProto, full_name: str | None = None) -> tuple[Column, ...]:
    """The value columns of a registered file's first message, or of the message `full_name`
    (`VALUE_SCHEMA_FULL_NAME`): its fields, upper-cased as ksqlDB names inferred columns."""
    if not file.message_type:
        raise SqlSemanticError("The Protobuf schema holds no message, whose fields are columns.")
    prefix = f".{file.package}" if file.package else ""
    known = dict(_messages(prefix, file.message_type))
    chosen = f"{prefix}.{file.message_type[0].name}" if full_name is None else f".{full_name}"
    if chosen not in known:
        raise no_message(full_name or chosen)
    record = _struct(known[chosen], known, (chosen,))
    return tuple(Column(f.name.upper(), f.type) for f in record.fields)


def no_message(full_name: str) -> SqlSemanticError:
    return SqlSemanticError(
        f"The Protobuf schema has no message '{full_name}' (the SCHEMA_FULL_NAME given)."
    )
