"""The records of ``__consumer_offsets``, byte for byte as Kafka writes them.

Each record is a key and a value, both prefixed by an int16 version. The key version says what
the record is (Kafka's ``OffsetCommitKey`` versions 0 and 1, ``GroupMetadataKey`` version 2);
a null value is a tombstone (the offset, or the whole group, is gone). Key versions Kafka's newer
coordinators use (3 and up: consumer, share and streams groups) are not classic-group records
and read back as None.

The formats are Kafka's message specs, declared as data (:class:`_Schema`): fields in wire
order with the versions that carry them. Versions below a spec's first flexible version use
the classic encoding (int16 string lengths, int32 byte lengths and array counts); flexible ones
use compact lengths and a tagged-field section (tags are skipped on read; none are written).
Kafka 4 writes ``OffsetCommitValue`` v3 (v1 when an expire timestamp is set) and
``GroupMetadataValue`` v3; every version is read.

:func:`partition_for` is Kafka's ``Utils.abs(groupId.hashCode) % partitions``.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol, TypeAlias

from strom.metadata.wire import ByteReader, MetadataRecordError, write_uvarint

__all__ = [
    "CoordinatorRecord",
    "GroupMetadataKey",
    "GroupMetadataValue",
    "MemberMetadata",
    "OffsetCommitKey",
    "OffsetCommitValue",
    "RecordKey",
    "decode_key",
    "decode_value",
    "encode_key",
    "encode_value",
    "java_string_hash",
    "partition_for",
]


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (over UTF-16 code units, as a signed 32-bit int)."""
    value = 0
    data = text.encode("utf-16-be")
    for index in range(0, len(data), 2):
        value = (31 * value + ((data[index] << 8) | data[index + 1])) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def partition_for(group_id: str, partitions: int) -> int:
    """The ``__consumer_offsets`` partition of a group (Kafka maps ``MIN_VALUE`` to 0)."""
    hashed = java_string_hash(group_id)
    return (0 if hashed == -(2**31) else abs(hashed)) % partitions


# --- the encoding ---------------------------------------------------------------------------


class _Type(Protocol):
    def write(self, out: bytearray, value: Any, version: int, flexible: bool) -> None: ...

    def read(self, reader: ByteReader, version: int, flexible: bool) -> Any: ...


@dataclass(frozen=True, slots=True)
class _Int:
    format: struct.Struct

    def write(self, out: bytearray, value: Any, version: int, flexible: bool) -> None:
        try:
            out += self.format.pack(value)
        except struct.error as error:
            raise MetadataRecordError(f"{value!r}: {error}") from None

    def read(self, reader: ByteReader, version: int, flexible: bool) -> int:
        return reader.unpack(self.format)


_INT16: Final = struct.Struct(">h")
_INT32: Final = struct.Struct(">i")
INT32: Final = _Int(_INT32)
INT64: Final = _Int(struct.Struct(">q"))


def _write_length(out: bytearray, length: int | None, flexible: bool, wide: bool) -> None:
    """A string (``wide`` False: int16) or bytes/array (int32) length; None is null."""
    if flexible:
        write_uvarint(out, 0 if length is None else length + 1)
    else:
        out += (_INT32 if wide else _INT16).pack(-1 if length is None else length)


def _read_length(reader: ByteReader, flexible: bool, wide: bool) -> int:
    """The length, -1 for null."""
    if flexible:
        return reader.uvarint() - 1
    return reader.unpack(_INT32 if wide else _INT16)


@dataclass(frozen=True, slots=True)
class _Str:
    nullable: bool

    def write(self, out: bytearray, value: Any, version: int, flexible: bool) -> None:
        if value is None and not self.nullable:
            raise MetadataRecordError("null is not allowed for this string")
        data = None if value is None else str(value).encode("utf-8")
        _write_length(out, None if data is None else len(data), flexible, wide=False)
        out += data or b""

    def read(self, reader: ByteReader, version: int, flexible: bool) -> str | None:
        length = _read_length(reader, flexible, wide=False)
        if length < 0:
            if not self.nullable:
                raise MetadataRecordError("null found where a string is required")
            return None
        try:
            return str(reader.take(length), "utf-8")
        except UnicodeDecodeError:
            raise MetadataRecordError("string is not valid UTF-8") from None


@dataclass(frozen=True, slots=True)
class _Bytes:
    def write(self, out: bytearray, value: Any, version: int, flexible: bool) -> None:
        _write_length(out, len(value), flexible, wide=True)
        out += value

    def read(self, reader: ByteReader, version: int, flexible: bool) -> bytes:
        length = _read_length(reader, flexible, wide=True)
        return b"" if length < 0 else bytes(reader.take(length))


STRING: Final = _Str(nullable=False)
NULLABLE_STRING: Final = _Str(nullable=True)
BYTES: Final = _Bytes()


@dataclass(frozen=True, slots=True)
class _Field:
    attr: str
    type: _Type
    min_version: int = 0
    max_version: int = 32767


@dataclass(frozen=True, slots=True)
class _Schema:
    """A struct's fields in wire order, and the first flexible version of its message."""

    cls: type[Any]
    fields: tuple[_Field, ...]
    flexible_from: int = 32767

    def write(self, out: bytearray, value: Any, version: int, flexible: bool) -> None:
        for field in self.fields:
            if field.min_version <= version <= field.max_version:
                try:
                    field.type.write(out, getattr(value, field.attr), version, flexible)
                except MetadataRecordError as error:
                    raise MetadataRecordError(
                        f"{self.cls.__name__}.{field.attr}: {error}"
                    ) from None
        if flexible:
            write_uvarint(out, 0)

    def read(self, reader: ByteReader, version: int, flexible: bool) -> Any:
        values = {
            field.attr: field.type.read(reader, version, flexible)
            for field in self.fields
            if field.min_version <= version <= field.max_version
        }
        if flexible:
            for _ in range(reader.uvarint()):
                reader.uvarint()
                reader.take(reader.uvarint())
        return self.cls(**values)


@dataclass(frozen=True, slots=True)
class _Array:
    """An array of structs (never null in these records)."""

    element: _Schema

    def write(self, out: bytearray, value: Any, version: int, flexible: bool) -> None:
        _write_length(out, len(value), flexible, wide=True)
        for item in value:
            self.element.write(out, item, version, flexible)

    def read(self, reader: ByteReader, version: int, flexible: bool) -> tuple[Any, ...]:
        count = _read_length(reader, flexible, wide=True)
        if count > reader.remaining:
            raise MetadataRecordError(f"array of {count} elements is longer than the record")
        return tuple(self.element.read(reader, version, flexible) for _ in range(max(count, 0)))


# --- the records ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    """Key versions 0 and 1 (Kafka writes 1): a group's committed offset of one partition."""

    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    offset: int
    metadata: str = ""
    commit_timestamp: int = -1
    leader_epoch: int = -1
    """v3+."""
    expire_timestamp: int = -1
    """v1 only (commits with a retention time, OffsetCommit v2-v4)."""


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    """Key version 2: a classic group's metadata."""

    group: str


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    member_id: str
    client_id: str
    client_host: str
    session_timeout: int
    subscription: bytes
    assignment: bytes
    group_instance_id: str | None = None
    """v3+."""
    rebalance_timeout: int = -1
    """v1+ (v0 members use the session timeout)."""


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    members: tuple[MemberMetadata, ...] = ()
    current_state_timestamp: int = -1
    """v2+."""


_OFFSET_COMMIT_KEY: Final = _Schema(
    OffsetCommitKey,
    (_Field("group", STRING), _Field("topic", STRING), _Field("partition", INT32)),
)
_GROUP_METADATA_KEY: Final = _Schema(GroupMetadataKey, (_Field("group", STRING),))
_OFFSET_COMMIT_VALUE: Final = _Schema(
    OffsetCommitValue,
    (
        _Field("offset", INT64),
        _Field("leader_epoch", INT32, 3),
        _Field("metadata", STRING),
        _Field("commit_timestamp", INT64),
        _Field("expire_timestamp", INT64, 1, 1),
    ),
    flexible_from=4,
)
_MEMBER_METADATA: Final = _Schema(
    MemberMetadata,
    (
        _Field("member_id", STRING),
        _Field("group_instance_id", NULLABLE_STRING, 3),
        _Field("client_id", STRING),
        _Field("client_host", STRING),
        _Field("rebalance_timeout", INT32, 1),
        _Field("session_timeout", INT32),
        _Field("subscription", BYTES),
        _Field("assignment", BYTES),
    ),
    flexible_from=4,
)
_GROUP_METADATA_VALUE: Final = _Schema(
    GroupMetadataValue,
    (
        _Field("protocol_type", STRING),
        _Field("generation", INT32),
        _Field("protocol", NULLABLE_STRING),
        _Field("leader", NULLABLE_STRING),
        _Field("current_state_timestamp", INT64, 2),
        _Field("members", _Array(_MEMBER_METADATA)),
    ),
    flexible_from=4,
)

RecordKey: TypeAlias = OffsetCommitKey | GroupMetadataKey
RecordValue: TypeAlias = OffsetCommitValue | GroupMetadataValue


@dataclass(frozen=True, slots=True)
class CoordinatorRecord:
    """One record to append: a key and its value (None: a tombstone)."""

    key: RecordKey
    value: RecordValue | None

    def encode(self) -> tuple[bytes, bytes | None]:
        return encode_key(self.key), None if self.value is None else encode_value(self.value)


OFFSET_COMMIT_KEY_VERSION: Final = 1
GROUP_METADATA_KEY_VERSION: Final = 2


def encode_key(key: RecordKey) -> bytes:
    out = bytearray()
    if isinstance(key, OffsetCommitKey):
        out += _INT16.pack(OFFSET_COMMIT_KEY_VERSION)
        _OFFSET_COMMIT_KEY.write(out, key, OFFSET_COMMIT_KEY_VERSION, flexible=False)
    else:
        out += _INT16.pack(GROUP_METADATA_KEY_VERSION)
        _GROUP_METADATA_KEY.write(out, key, GROUP_METADATA_KEY_VERSION, flexible=False)
    return bytes(out)


def decode_key(data: bytes | memoryview) -> RecordKey | None:
    """The key, or None for a record of a newer group type (key version 3 and up)."""
    reader = ByteReader(data)
    version = reader.unpack(_INT16)
    schema = {0: _OFFSET_COMMIT_KEY, 1: _OFFSET_COMMIT_KEY, 2: _GROUP_METADATA_KEY}.get(version)
    if schema is None:
        if version < 0:
            raise MetadataRecordError(f"invalid key version {version}")
        return None
    key: RecordKey = schema.read(reader, version, flexible=False)
    reader.expect_end()
    return key


def _value_version(value: RecordValue) -> int:
    if isinstance(value, GroupMetadataValue):
        return 3
    return 1 if value.expire_timestamp != -1 else 3


def encode_value(value: RecordValue) -> bytes:
    """The value as Kafka 4 writes it (see the module doc for the versions)."""
    version = _value_version(value)
    schema = (
        _GROUP_METADATA_VALUE if isinstance(value, GroupMetadataValue) else _OFFSET_COMMIT_VALUE
    )
    out = bytearray(_INT16.pack(version))
    schema.write(out, value, version, flexible=version >= schema.flexible_from)
    return bytes(out)


def decode_value(key: RecordKey, data: bytes | memoryview) -> RecordValue:
    """The value of a record with ``key``, any version Kafka has written."""
    schema = _OFFSET_COMMIT_VALUE if isinstance(key, OffsetCommitKey) else _GROUP_METADATA_VALUE
    reader = ByteReader(data)
    version = reader.unpack(_INT16)
    if not 0 <= version <= 4:
        raise MetadataRecordError(f"unknown {schema.cls.__name__} version {version}")
    value: RecordValue = schema.read(reader, version, flexible=version >= schema.flexible_from)
    return value


def _check_schemas(schemas: Sequence[_Schema]) -> None:
    for schema in schemas:
        if {f.name for f in dataclasses.fields(schema.cls)} != {f.attr for f in schema.fields}:
            raise TypeError(f"{schema.cls.__name__}: schema fields do not match the dataclass")


_check_schemas(
    [
        _OFFSET_COMMIT_KEY,
        _GROUP_METADATA_KEY,
        _OFFSET_COMMIT_VALUE,
        _MEMBER_METADATA,
        _GROUP_METADATA_VALUE,
    ]
)
