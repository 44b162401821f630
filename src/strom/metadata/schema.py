"""Kafka's flexible message encoding, driven by schemas declared as data.

A :class:`StructSchema` lists a frozen dataclass's fields in wire order, each with its type, the
versions that carry it and, for tagged fields, its tag. Defaults come from the dataclass itself,
so a field that a version does not carry reads back as its default. Encoding follows Kafka's
generated code for flexible versions: non-tagged fields in order, then the tagged-field section
(count, then tag, size and value for every tagged field whose value is not its default, in
ascending tag order). Unknown tags are skipped on read, as forward compatibility requires.
"""

from __future__ import annotations

import dataclasses
import struct
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from strom.metadata.wire import MAX_STRING_BYTES, ByteReader, MetadataRecordError, write_uvarint

__all__ = [
    "BOOL",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "NULLABLE_STRING",
    "STRING",
    "UINT16",
    "UUID",
    "ArrayType",
    "Field",
    "FieldType",
    "IntType",
    "StringType",
    "StructSchema",
    "StructType",
]


class FieldType(Protocol):
    @property
    def name(self) -> str: ...

    def write(self, out: bytearray, value: Any, version: int) -> None: ...

    def read(self, reader: ByteReader, version: int) -> Any: ...


@dataclass(frozen=True, slots=True)
class IntType:
    name: str
    format: struct.Struct
    low: int
    high: int

    def write(self, out: bytearray, value: Any, version: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise MetadataRecordError(f"expected an integer, got {value!r}")
        if not self.low <= value <= self.high:
            raise MetadataRecordError(f"{value} is out of range for {self.name}")
        out += self.format.pack(value)

    def read(self, reader: ByteReader, version: int) -> int:
        return reader.unpack(self.format)


def _int_type(name: str, fmt: str) -> IntType:
    packer = struct.Struct(fmt)
    bits = packer.size * 8
    if fmt[-1].isupper():
        return IntType(name, packer, 0, 2**bits - 1)
    return IntType(name, packer, -(2 ** (bits - 1)), 2 ** (bits - 1) - 1)


INT8: Final = _int_type("int8", ">b")
INT16: Final = _int_type("int16", ">h")
INT32: Final = _int_type("int32", ">i")
INT64: Final = _int_type("int64", ">q")
UINT16: Final = _int_type("uint16", ">H")


@dataclass(frozen=True, slots=True)
class _BoolType:
    name: str = "bool"

    def write(self, out: bytearray, value: Any, version: int) -> None:
        if not isinstance(value, bool):
            raise MetadataRecordError(f"expected a bool, got {value!r}")
        out.append(1 if value else 0)

    def read(self, reader: ByteReader, version: int) -> bool:
        return reader.take(1)[0] != 0


@dataclass(frozen=True, slots=True)
class _UuidType:
    name: str = "uuid"

    def write(self, out: bytearray, value: Any, version: int) -> None:
        if not isinstance(value, uuid.UUID):
            raise MetadataRecordError(f"expected a UUID, got {value!r}")
        out += value.bytes

    def read(self, reader: ByteReader, version: int) -> uuid.UUID:
        return reader.uuid()


BOOL: Final = _BoolType()
UUID: Final = _UuidType()


@dataclass(frozen=True, slots=True)
class StringType:
    """A compact string: unsigned varint of length + 1 (0 for null), then UTF-8 bytes."""

    nullable: bool
    name: str = "string"

    def write(self, out: bytearray, value: Any, version: int) -> None:
        if value is None:
            if not self.nullable:
                raise MetadataRecordError("null is not allowed for this string")
            write_uvarint(out, 0)
            return
        if not isinstance(value, str):
            raise MetadataRecordError(f"expected a string, got {value!r}")
        data = value.encode("utf-8")
        if len(data) > MAX_STRING_BYTES:
            raise MetadataRecordError(f"string of {len(data)} bytes is too long to encode")
        write_uvarint(out, len(data) + 1)
        out += data

    def read(self, reader: ByteReader, version: int) -> str | None:
        length = reader.uvarint() - 1
        if length < 0:
            if not self.nullable:
                raise MetadataRecordError("null found where a string is required")
            return None
        if length > MAX_STRING_BYTES:
            raise MetadataRecordError(f"string length {length} is too long")
        try:
            return str(reader.take(length), "utf-8")
        except UnicodeDecodeError:
            raise MetadataRecordError("string is not valid UTF-8") from None


STRING: Final = StringType(nullable=False)
NULLABLE_STRING: Final = StringType(nullable=True, name="nullable string")


@dataclass(frozen=True, slots=True)
class ArrayType:
    """A compact array (length + 1, 0 for null) of one element type; Python tuples."""

    element: FieldType
    nullable: bool = False

    @property
    def name(self) -> str:
        return f"[]{self.element.name}"

    def write(self, out: bytearray, value: Any, version: int) -> None:
        if value is None:
            if not self.nullable:
                raise MetadataRecordError("null is not allowed for this array")
            write_uvarint(out, 0)
            return
        if not isinstance(value, Sequence) or isinstance(value, str | bytes):
            raise MetadataRecordError(f"expected a sequence, got {value!r}")
        write_uvarint(out, len(value) + 1)
        for item in value:
            self.element.write(out, item, version)

    def read(self, reader: ByteReader, version: int) -> tuple[Any, ...] | None:
        count = reader.uvarint() - 1
        if count < 0:
            if not self.nullable:
                raise MetadataRecordError("null found where an array is required")
            return None
        if count > reader.remaining:
            raise MetadataRecordError(f"array of {count} elements is longer than the record")
        return tuple(self.element.read(reader, version) for _ in range(count))


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a struct: the dataclass attribute, its type, versions and optional tag."""

    attr: str
    type: FieldType
    min_version: int = 0
    max_version: int | None = None
    tag: int | None = None

    def present_in(self, version: int) -> bool:
        return self.min_version <= version and (
            self.max_version is None or version <= self.max_version
        )


_REQUIRED: Final = object()


class StructSchema:
    """The wire layout of one frozen dataclass (a record, or a struct inside an array)."""

    def __init__(self, cls: type[Any], fields: Sequence[Field]) -> None:
        self.cls = cls
        self.fields = tuple(fields)
        self._defaults: dict[str, Any] = {}
        declared = {field.name: field for field in dataclasses.fields(cls)}
        if set(declared) != {field.attr for field in self.fields}:
            raise TypeError(f"{cls.__name__}: schema fields do not match the dataclass fields")
        for field in self.fields:
            spec = declared[field.attr]
            if spec.default is not dataclasses.MISSING:
                self._defaults[field.attr] = spec.default
            elif spec.default_factory is not dataclasses.MISSING:
                self._defaults[field.attr] = spec.default_factory()
            elif field.min_version > 0 or field.max_version is not None or field.tag is not None:
                raise TypeError(f"{cls.__name__}.{field.attr} needs a default")
        self._tags = {field.tag for field in self.fields if field.tag is not None}

    def default(self, attr: str) -> Any:
        return self._defaults.get(attr, _REQUIRED)

    def is_default(self, attr: str, value: Any) -> bool:
        default = self._defaults.get(attr, _REQUIRED)
        return default is not _REQUIRED and bool(value == default)

    def can_encode(self, value: Any, version: int) -> bool:
        """True when every field that ``version`` lacks holds its default."""
        return all(
            field.present_in(version) or self.is_default(field.attr, getattr(value, field.attr))
            for field in self.fields
        )

    def write(self, out: bytearray, value: Any, version: int) -> None:
        tagged: list[tuple[int, bytes]] = []
        for field in self.fields:
            if not field.present_in(version):
                continue
            item = getattr(value, field.attr)
            try:
                if field.tag is None:
                    field.type.write(out, item, version)
                elif not self.is_default(field.attr, item):
                    buffer = bytearray()
                    field.type.write(buffer, item, version)
                    tagged.append((field.tag, bytes(buffer)))
            except MetadataRecordError as error:
                raise MetadataRecordError(f"{self.cls.__name__}.{field.attr}: {error}") from None
        tagged.sort()
        write_uvarint(out, len(tagged))
        for tag, payload in tagged:
            write_uvarint(out, tag)
            write_uvarint(out, len(payload))
            out += payload

    def read(self, reader: ByteReader, version: int) -> Any:
        values: dict[str, Any] = {}
        by_tag: dict[int, Field] = {}
        for field in self.fields:
            if not field.present_in(version):
                continue
            if field.tag is not None:
                by_tag[field.tag] = field
                continue
            values[field.attr] = self._read_field(field, reader, version)
        for _ in range(reader.uvarint()):
            tag = reader.uvarint()
            payload = ByteReader(reader.take(reader.uvarint()))
            field_or_none = by_tag.get(tag)
            if field_or_none is None:
                continue  # a tag from a newer version: skip it
            values[field_or_none.attr] = self._read_field(field_or_none, payload, version)
            payload.expect_end()
        return self.cls(**values)

    def _read_field(self, field: Field, reader: ByteReader, version: int) -> Any:
        try:
            return field.type.read(reader, version)
        except MetadataRecordError as error:
            raise MetadataRecordError(f"{self.cls.__name__}.{field.attr}: {error}") from None


@dataclass(frozen=True, slots=True)
class StructType:
    """A struct as an array element, with its own tagged-field section."""

    schema: StructSchema

    @property
    def name(self) -> str:
        return self.schema.cls.__name__

    def write(self, out: bytearray, value: Any, version: int) -> None:
        if not isinstance(value, self.schema.cls):
            raise MetadataRecordError(f"expected {self.name}, got {value!r}")
        self.schema.write(out, value, version)

    def read(self, reader: ByteReader, version: int) -> Any:
        return self.schema.read(reader, version)
