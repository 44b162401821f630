"""The ``.proto`` schema Confluent's ProtobufConverter registers for a Connect schema (its
``ProtobufData``), from a source's Spark type and names. Pure.

A struct is a proto3 message named by its Connect schema's name (the namespace becoming the
package) or ``ConnectDefault1``, ``ConnectDefault2`` ... when it has none; fields are numbered
in order; int8/int16 are ``int32`` marked with ``connect.type``, Decimal is
``confluent.type.Decimal`` with its precision and scale as field metadata, Date
``google.type.Date``, Timestamp ``google.protobuf.Timestamp``; nested structs are messages
(``ConnectDefaultN``) inside the one that uses them, arrays ``repeated``. Optional fields are
plain proto3 fields (a null is the field left unset, read back as its default), or, with
``optional.for.nullables=true``, scalars are ``optional`` (messages always tell unset apart)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

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
    ShortType,
    StringType,
    StructType,
    TimestampType,
)

__all__ = ["protobuf_schema", "record_name"]

_SCALARS: tuple[tuple[type[DataType], str], ...] = (
    (IntegerType, "int32"),
    (LongType, "int64"),
    (FloatType, "float"),
    (DoubleType, "double"),
    (BooleanType, "bool"),
    (StringType, "string"),
    (BinaryType, "bytes"),
)
_SCALAR_NAMES = frozenset(kind for _, kind in _SCALARS)
_LOGICAL: tuple[tuple[type[DataType], str, str], ...] = (
    (DecimalType, "confluent.type.Decimal", "confluent/type/decimal.proto"),
    (DateType, "google.type.Date", "google/type/date.proto"),
    (TimestampType, "google.protobuf.Timestamp", "google/protobuf/timestamp.proto"),
)
_META = "confluent/meta.proto"


def _meta(params: dict[str, str]) -> str:
    listed = ", ".join(f'{{key: "{k}", value: "{v}"}}' for k, v in params.items())
    return f" [(confluent.field_meta) = {{params: [{listed}]}}]"


class _Writer:
    """One file being written: the default names given so far, the messages and imports."""

    def __init__(self, optional_nullables: bool) -> None:
        self.optional_nullables = optional_nullables
        self.defaults: Iterator[str] = (f"ConnectDefault{n}" for n in itertools.count(1))
        self.imports: set[str] = set()

    def message(self, name: str, struct: StructType, depth: int) -> list[str]:
        pad = "  " * depth
        lines, nested = [f"{pad}message {name} {{"], list[list[str]]()
        for number, field in enumerate(struct.fields, 1):
            kind, options = self.field_type(field.name, field.dataType, nested, depth + 1)
            label = ""
            if isinstance(field.dataType, ArrayType):
                label = "repeated "
            elif field.nullable and self.optional_nullables and kind in _SCALAR_NAMES:
                label = "optional "
            lines.append(f"{pad}  {label}{kind} {field.name} = {number}{options};")
        for block in nested:
            lines += ["", *block]
        return [*lines, f"{pad}}}"]

    def field_type(
        self, field: str, data_type: DataType, nested: list[list[str]], depth: int
    ) -> tuple[str, str]:
        """A field's type and its options (``connect.type`` and a decimal's metadata)."""
        if isinstance(data_type, ArrayType):
            if isinstance(data_type.elementType, ArrayType):
                raise ValueError("ProtobufConverter: arrays of arrays are not supported")
            return self.field_type(field, data_type.elementType, nested, depth)
        if isinstance(data_type, StructType):
            name = next(self.defaults)
            if name == field:  # a message may not share its field's name
                name += "Message"
            nested.append(self.message(name, data_type, depth))
            return name, ""
        for logical, kind, path in _LOGICAL:
            if isinstance(data_type, logical):
                self.imports.add(path)
                if isinstance(data_type, DecimalType):
                    self.imports.add(_META)
                    params = {"precision": str(data_type.precision)}
                    return kind, _meta({**params, "scale": str(data_type.scale)})
                return kind, ""
        if isinstance(data_type, ByteType | ShortType):
            self.imports.add(_META)
            small = "int8" if isinstance(data_type, ByteType) else "int16"
            return "int32", _meta({"connect.type": small})
        for scalar, kind in _SCALARS:
            if isinstance(data_type, scalar):
                return kind, ""
        raise ValueError(f"ProtobufConverter: {data_type.simpleString()} data is not supported")


def protobuf_schema(
    data_type: DataType, name: str | None = None, optional_nullables: bool = False
) -> str:
    """The ``.proto`` text of a Connect struct schema (a Spark struct and its name), as
    Confluent's ProtobufConverter registers it; ValueError for what it cannot write."""
    if not isinstance(data_type, StructType):
        raise ValueError(
            f"ProtobufConverter: Unsupported root schema of type {data_type.simpleString()}"
            " (a record's key or value must be a struct)"
        )
    writer = _Writer(optional_nullables)
    package, _, simple = record_name(name).rpartition(".")
    next(writer.defaults)  # the record's own, used or not
    body = writer.message(simple, data_type, 0)
    head = ['syntax = "proto3";']
    if package:
        head.append(f"package {package};")
    if writer.imports:
        head += ["", *(f'import "{path}";' for path in sorted(writer.imports))]
    return "\n".join([*head, "", *body]) + "\n"


def record_name(name: str | None) -> str:
    """The full name of the message a struct named ``name`` becomes (the subject of
    RecordNameStrategy)."""
    return name or "ConnectDefault1"
