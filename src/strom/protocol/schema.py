"""Kafka's message encoding, driven by schemas declared as data.

A :class:`StructSchema` lists a frozen dataclass's fields in wire order, each with its type, the
versions that carry it, its default (Kafka's ``"default"``; else the dataclass's) and, for
tagged fields, its tag. It encodes the way Kafka's generated code does:

* versions below the message's first flexible version use the classic encoding: int16 string
  lengths, int32 bytes lengths and array counts, -1 meaning null, and no tagged fields;
* flexible versions use compact lengths (unsigned varint of length + 1, 0 meaning null) and end
  every struct with a tagged-field section (count, then tag, size and value of every tagged
  field whose value is not its default, in ascending tag order). Unknown tags are skipped on
  read, as forward compatibility requires.

Metadata records (:mod:`strom.metadata.records`) and the records of ``__consumer_offsets``
(:mod:`strom.coordinator.group.records`) are both declared with it.
"""

from __future__ import annotations

import dataclasses
import struct
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

__all__ = [
    "BOOL",
    "BYTES",
    "FLOAT64",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "MAX_STRING_BYTES",
    "NULLABLE_STRING",
    "STRING",
    "UINT16",
    "UUID",
    "ArrayType",
    "ByteReader",
    "Field",
    "FieldType",
    "IntType",
    "SchemaError",
    "StringType",
    "StructSchema",
    "StructType",
    "write_uvarint",
]

MAX_STRING_BYTES: Final = 0x7FFF
"""Kafka's generated codecs refuse strings longer than a signed 16-bit length."""

_MAX_UVARINT_BYTES: Final = 5
_MAX_UVARINT: Final = 2**32 - 1
_INT16: Final = struct.Struct(">h")
_INT32: Final = struct.Struct(">i")
_FLOAT64: Final = struct.Struct(">d")


class SchemaError(ValueError):
    """Bytes that do not decode by their schema, or a value the schema cannot encode."""


# --- primitives -----------------------------------------------------------------------------


def write_uvarint(out: bytearray, value: int) -> None:
    """Append an unsigned 32-bit varint (7 bits a byte, least significant group first)."""
    if not 0 <= value <= _MAX_UVARINT:
        raise SchemaError(f"unsigned varint out of range: {value}")
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


class ByteReader:
    """Reads primitives from a buffer, front to back; every short read is a clear error."""

    __slots__ = ("_data", "_position")

    def __init__(self, data: bytes | memoryview) -> None:
        self._data = memoryview(data)
        self._position = 0

    @property
    def remaining(self) -> int:
        return len(self._data) - self._position

    def take(self, size: int) -> memoryview:
        if size < 0 or size > self.remaining:
            raise SchemaError(
                f"record truncated: wanted {size} bytes at position {self._position}, "
                f"{self.remaining} left"
            )
        start = self._position
        self._position += size
        return self._data[start : self._position]

    def uvarint(self) -> int:
        value = 0
        for index in range(_MAX_UVARINT_BYTES):
            byte = self.take(1)[0]
            value |= (byte & 0x7F) << (7 * index)
            if not byte & 0x80:
                return value
        raise SchemaError("unsigned varint longer than 5 bytes")

    def unpack(self, fmt: struct.Struct) -> int:
        value: int = fmt.unpack(self.take(fmt.size))[0]
        return value

    def uuid(self) -> uuid.UUID:
        return uuid.UUID(bytes=bytes(self.take(16)))

    def expect_end(self) -> None:
        if self.remaining:
            raise SchemaError(f"{self.remaining} unexpected bytes after the record")


def _write_length(
    out: bytearray, length: int | None, flexible: bool, classic: struct.Struct
) -> None:
    """A length (None: null): compact when ``flexible``, else in the ``classic`` int format."""
    if flexible:
        write_uvarint(out, 0 if length is None else length + 1)
    else:
        out += classic.pack(-1 if length is None else length)


def _read_length(reader: ByteReader, flexible: bool, classic: struct.Struct) -> int:
    """A length written by :func:`_write_length`; -1 for null."""
    return reader.uvarint() - 1 if flexible else reader.unpack(classic)


# --- field types ----------------------------------------------------------------------------


class FieldType(Protocol):
    @property
    def name(self) -> str: ...

    def write(self, out: bytearray, value: Any, version: int, flexible: bool) -> None: ...

    def read(self, reader: ByteReader, version: int, flexible: bool) -> Any: ...


@dataclass(frozen=True, slots=True)
class IntType:
    name: str
    format: struct.Struct
    low: int
    high: int

    def write(self, out: bytearray, value: Any, version: int, flexible: bool) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise SchemaError(f"expected an integer, got {value!r}")
        if not self.low <= value <= self.high:
            raise SchemaError(f"{value} is out of range for {self.name}")
        out += self.format.pack(value)

    def read(self, reader: ByteReader, version: int, flexible: bool) -> int:
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

    def write(self, out: bytearray, value: Any, version: int, flexible: bool) -> None:
        if not isinstance(value, bool):
            raise SchemaError(f"expected a bool, got {value!r}")
        out.append(1 if value else 0)

    def read(self, reader: ByteReader, version: int, flexible: bool) -> bool:
        return reader.take(1)[0] != 0


@dataclass(frozen=True, slots=True)
class _UuidType:
    name: str = "uuid"

    def write(self, out: bytearray, value: Any, version: int, flexible: bool) -> None:
        if not isinstance(value, uuid.UUID):
            raise SchemaError(f"expected a UUID, got {value!r}")
        out += value.bytes

    def read(self, reader: ByteReader, version: int, flexible: bool) -> uuid.UUID:
        return reader.uuid()


@dataclass(frozen=True, slots=True)
class _BytesType:
    """Bytes (never null here): int32 length, or compact length + 1 when flexible."""

    name: str = "bytes"

    def write(self, out: bytearray, value: Any, version: int, flexible: bool) -> None:
        if not isinstance(value, bytes | bytearray | memoryview):
            raise SchemaError(f"expected bytes, got {value!r}")
        _write_length(out, len(value), flexible, _INT32)
        out += value

    def read(self, reader: ByteReader, version: int, flexible: bool) -> bytes:
        length = _read_length(reader, flexible, _INT32)
        if length < 0:
            raise SchemaError("null found where bytes are required")
        return bytes(reader.take(length))


@dataclass(frozen=True, slots=True)
class _Float64Type:
    name: str = "float64"

    def write(self, out: bytearray, value: Any, version: int, flexible: bool) -> None:
        if isinstance(value, bool) or not isinstance(value, float | int):
            raise SchemaError(f"expected a number, got {value!r}")
        out += _FLOAT64.pack(value)

    def read(self, reader: ByteReader, version: int, flexible: bool) -> float:
        value: float = _FLOAT64.unpack(reader.take(8))[0]
        return value


BOOL: Final = _BoolType()
FLOAT64: Final = _Float64Type()
UUID: Final = _UuidType()
BYTES: Final = _BytesType()


@dataclass(frozen=True, slots=True)
class StringType:
    """UTF-8 text: int16 length, or compact length + 1 when flexible; null where ``nullable``."""

    nullable: bool
    name: str = "string"

    def write(self, out: bytearray, value: Any, version: int, flexible: bool) -> None:
        if value is None:
            if not self.nullable:
                raise SchemaError("null is not allowed for this string")
            _write_length(out, None, flexible, _INT16)
            return
        if not isinstance(value, str):
            raise SchemaError(f"expected a string, got {value!r}")
        data = value.encode("utf-8")
        if len(data) > MAX_STRING_BYTES:
            raise SchemaError(f"string of {len(data)} bytes is too long to encode")
        _write_length(out, len(data), flexible, _INT16)
        out += data

    def read(self, reader: ByteReader, version: int, flexible: bool) -> str | None:
        length = _read_length(reader, flexible, _INT16)
        if length < 0:
            if not self.nullable:
                raise SchemaError("null found where a string is required")
            return None
        if length > MAX_STRING_BYTES:
            raise SchemaError(f"string length {length} is too long")
        try:
            return str(reader.take(length), "utf-8")
        except UnicodeDecodeError:
            raise SchemaError("string is not valid UTF-8") from None


STRING: Final = StringType(nullable=False)
NULLABLE_STRING: Final = StringType(nullable=True, name="nullable string")


@dataclass(frozen=True, slots=True)
class ArrayType:
    """An array of one element type (int32 count, or compact count + 1); Python tuples."""

    element: FieldType
    nullable: bool = False

    @property
    def name(self) -> str:
        return f"[]{self.element.name}"

    def write(self, out: bytearray, value: Any, version: int, flexible: bool) -> None:
        if value is None:
            if not self.nullable:
                raise SchemaError("null is not allowed for this array")
            _write_length(out, None, flexible, _INT32)
            return
        if not isinstance(value, Sequence) or isinstance(value, str | bytes):
            raise SchemaError(f"expected a sequence, got {value!r}")
        _write_length(out, len(value), flexible, _INT32)
        for item in value:
            self.element.write(out, item, version, flexible)

    def read(self, reader: ByteReader, version: int, flexible: bool) -> tuple[Any, ...] | None:
        count = _read_length(reader, flexible, _INT32)
        if count < 0:
            if not self.nullable:
                raise SchemaError("null found where an array is required")
            return None
        if count > reader.remaining:
            raise SchemaError(f"array of {count} elements is longer than the record")
        return tuple(self.element.read(reader, version, flexible) for _ in range(count))


# --- structs --------------------------------------------------------------------------------

_REQUIRED: Final = object()


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a struct: the dataclass attribute, its type, versions, tag and default.

    ``default`` is the value of a version that lacks the field (Kafka's ``"default"``); when
    left out, the dataclass field's own default is used.
    """

    attr: str
    type: FieldType
    min_version: int = 0
    max_version: int | None = None
    tag: int | None = None
    default: Any = _REQUIRED

    def present_in(self, version: int) -> bool:
        return self.min_version <= version and (
            self.max_version is None or version <= self.max_version
        )


class StructSchema:
    """The wire layout of one frozen dataclass (a message, or a struct inside an array).

    ``flexible_from`` is the message's first flexible version (None: it has none); structs
    inside arrays follow the message they are in.
    """

    def __init__(
        self, cls: type[Any], fields: Sequence[Field], *, flexible_from: int | None = 0
    ) -> None:
        self.cls = cls
        self.fields = tuple(fields)
        self.flexible_from = flexible_from
        self._defaults: dict[str, Any] = {}
        declared = {field.name: field for field in dataclasses.fields(cls)}
        if set(declared) != {field.attr for field in self.fields}:
            raise TypeError(f"{cls.__name__}: schema fields do not match the dataclass fields")
        for field in self.fields:
            spec = declared[field.attr]
            if field.default is not _REQUIRED:
                self._defaults[field.attr] = field.default
            elif spec.default is not dataclasses.MISSING:
                self._defaults[field.attr] = spec.default
            elif spec.default_factory is not dataclasses.MISSING:
                self._defaults[field.attr] = spec.default_factory()
            elif field.min_version > 0 or field.max_version is not None or field.tag is not None:
                raise TypeError(f"{cls.__name__}.{field.attr} needs a default")

    def is_flexible(self, version: int) -> bool:
        return self.flexible_from is not None and version >= self.flexible_from

    def is_default(self, attr: str, value: Any) -> bool:
        default = self._defaults.get(attr, _REQUIRED)
        return default is not _REQUIRED and bool(value == default)

    def can_encode(self, value: Any, version: int) -> bool:
        """True when every field that ``version`` lacks holds its default."""
        return all(
            field.present_in(version) or self.is_default(field.attr, getattr(value, field.attr))
            for field in self.fields
        )

    def encode(self, out: bytearray, value: Any, version: int) -> None:
        """Append ``value`` as the top-level message of ``version``."""
        self.write(out, value, version, self.is_flexible(version))

    def decode(self, reader: ByteReader, version: int) -> Any:
        """Read the top-level message of ``version``."""
        return self.read(reader, version, self.is_flexible(version))

    def write(self, out: bytearray, value: Any, version: int, flexible: bool) -> None:
        tagged: list[tuple[int, bytes]] = []
        for field in self.fields:
            if not field.present_in(version) or (field.tag is not None and not flexible):
                continue
            item = getattr(value, field.attr)
            try:
                if field.tag is None:
                    field.type.write(out, item, version, flexible)
                elif not self.is_default(field.attr, item):
                    buffer = bytearray()
                    field.type.write(buffer, item, version, flexible)
                    tagged.append((field.tag, bytes(buffer)))
            except SchemaError as error:
                raise SchemaError(f"{self.cls.__name__}.{field.attr}: {error}") from None
        if not flexible:
            return
        tagged.sort()
        write_uvarint(out, len(tagged))
        for tag, payload in tagged:
            write_uvarint(out, tag)
            write_uvarint(out, len(payload))
            out += payload

    def read(self, reader: ByteReader, version: int, flexible: bool) -> Any:
        values: dict[str, Any] = {}
        by_tag: dict[int, Field] = {}
        for field in self.fields:
            if field.present_in(version) and field.tag is None:
                values[field.attr] = self._read_field(field, reader, version, flexible)
                continue
            values[field.attr] = self._defaults[field.attr]
            if field.tag is not None and field.present_in(version):
                by_tag[field.tag] = field
        if not flexible:
            return self.cls(**values)
        for _ in range(reader.uvarint()):
            tag = reader.uvarint()
            payload = ByteReader(reader.take(reader.uvarint()))
            field_or_none = by_tag.get(tag)
            if field_or_none is None:
                continue  # a tag from a newer version: skip it
            values[field_or_none.attr] = self._read_field(field_or_none, payload, version, True)
            payload.expect_end()
        return self.cls(**values)

    def _read_field(self, field: Field, reader: ByteReader, version: int, flexible: bool) -> Any:
        try:
            return field.type.read(reader, version, flexible)
        except SchemaError as error:
            raise SchemaError(f"{self.cls.__name__}.{field.attr}: {error}") from None


@dataclass(frozen=True, slots=True)
class StructType:
    """A struct as an array element (with its own tagged-field section when flexible)."""

    schema: StructSchema

    @property
    def name(self) -> str:
        return self.schema.cls.__name__

    def write(self, out: bytearray, value: Any, version: int, flexible: bool) -> None:
        if not isinstance(value, self.schema.cls):
            raise SchemaError(f"expected {self.name}, got {value!r}")
        self.schema.write(out, value, version, flexible)

    def read(self, reader: ByteReader, version: int, flexible: bool) -> Any:
        return self.schema.read(reader, version, flexible)
