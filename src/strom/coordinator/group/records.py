"""The records of ``__consumer_offsets``, byte for byte as Kafka writes them.

A record's key and value each start with an int16 version. The key version says what the record
is: 0 and 1 are an ``OffsetCommitKey`` (a group's committed offset of one partition; Kafka writes
1), 2 a ``GroupMetadataKey`` (a classic group's metadata). A null value is a tombstone: the
offset, or the whole group, is gone.

The formats are Kafka's message specs (``OffsetCommitKey.json``, ``OffsetCommitValue.json``,
``GroupMetadataKey.json``, ``GroupMetadataValue.json``) declared as data with
:mod:`strom.protocol.schema`. Values are read in every version (0 to 4, version 4 flexible) and
written as Kafka 4 writes them: ``OffsetCommitValue`` v3, or v1 when the commit carries an expire
timestamp (OffsetCommit v2 to v4 with a retention time), and ``GroupMetadataValue`` v3.

"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final, TypeAlias, overload

from strom.protocol.schema import (
    BYTES,
    INT32,
    INT64,
    NULLABLE_STRING,
    STRING,
    ArrayType,
    ByteReader,
    Field,
    SchemaError,
    StructSchema,
    StructType,
)

__all__ = [
    "CoordinatorRecord",
    "GroupMetadataKey",
    "GroupMetadataValue",
    "MemberMetadata",
    "OffsetCommitKey",
    "OffsetCommitValue",
    "RecordKey",
    "RecordValue",
    "UnknownRecordTypeError",
    "decode_key",
    "decode_value",
    "encode_key",
    "encode_value",
]


class UnknownRecordTypeError(SchemaError):
    """A key version that is not a classic group record (Kafka's ``UnknownRecordTypeException``).

    Kafka's loader skips such records with a warning: newer group types (consumer, share and
    streams groups) use key versions 3 and up.
    """


@dataclass(frozen=True, slots=True)
class OffsetCommitKey:
    """A group's committed offset of one partition."""

    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class OffsetCommitValue:
    offset: int
    leader_epoch: int
    """-1 when unknown; versions before 3 read back as -1."""
    metadata: str
    commit_timestamp: int
    expire_timestamp: int = -1
    """Only version 1 carries it; -1 means none."""


@dataclass(frozen=True, slots=True)
class GroupMetadataKey:
    """A classic group's metadata."""

    group: str


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    member_id: str
    group_instance_id: str | None
    """Static members only (value v3+)."""
    client_id: str
    client_host: str
    rebalance_timeout: int
    """Value v1+; version 0 reads back as 0, the spec's default."""
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int
    """Value v2+; -1 when unknown."""
    members: tuple[MemberMetadata, ...]


RecordKey: TypeAlias = OffsetCommitKey | GroupMetadataKey
RecordValue: TypeAlias = OffsetCommitValue | GroupMetadataValue

_OFFSET_COMMIT_KEY: Final = StructSchema(
    OffsetCommitKey,
    (Field("group", STRING), Field("topic", STRING), Field("partition", INT32)),
    flexible_from=None,
)
_GROUP_METADATA_KEY: Final = StructSchema(
    GroupMetadataKey, (Field("group", STRING),), flexible_from=None
)
_OFFSET_COMMIT_VALUE: Final = StructSchema(
    OffsetCommitValue,
    (
        Field("offset", INT64),
        Field("leader_epoch", INT32, min_version=3, default=-1),
        Field("metadata", STRING),
        Field("commit_timestamp", INT64),
        Field("expire_timestamp", INT64, min_version=1, max_version=1),
    ),
    flexible_from=4,
)
_MEMBER_METADATA: Final = StructSchema(
    MemberMetadata,
    (
        Field("member_id", STRING),
        Field("group_instance_id", NULLABLE_STRING, min_version=3, default=None),
        Field("client_id", STRING),
        Field("client_host", STRING),
        Field("rebalance_timeout", INT32, min_version=1, default=0),
        Field("session_timeout", INT32),
        Field("subscription", BYTES),
        Field("assignment", BYTES),
    ),
    flexible_from=4,
)
_GROUP_METADATA_VALUE: Final = StructSchema(
    GroupMetadataValue,
    (
        Field("protocol_type", STRING),
        Field("generation", INT32),
        Field("protocol", NULLABLE_STRING),
        Field("leader", NULLABLE_STRING),
        Field("current_state_timestamp", INT64, min_version=2, default=-1),
        Field("members", ArrayType(StructType(_MEMBER_METADATA))),
    ),
    flexible_from=4,
)

_VERSION: Final = struct.Struct(">h")
_KEY_SCHEMAS: Final = {0: _OFFSET_COMMIT_KEY, 1: _OFFSET_COMMIT_KEY, 2: _GROUP_METADATA_KEY}
"""Schemas by key version."""
_KEY_VERSION: Final = {OffsetCommitKey: 1, GroupMetadataKey: 2}
"""The key version Kafka writes, by key type."""
_VALUE_SCHEMAS: Final = {
    OffsetCommitKey: _OFFSET_COMMIT_VALUE,
    GroupMetadataKey: _GROUP_METADATA_VALUE,
}
"""The value schema of each key type."""
_SCHEMA_OF_VALUE: Final = {schema.cls: schema for schema in _VALUE_SCHEMAS.values()}
_MAX_VALUE_VERSION: Final = 4


@dataclass(frozen=True, slots=True)
class CoordinatorRecord:
    """One record to append: a key and its value (None: a tombstone)."""

    key: RecordKey
    value: RecordValue | None

    def encode(self) -> tuple[bytes, bytes | None]:
        return encode_key(self.key), None if self.value is None else encode_value(self.value)


def _encode(schema: StructSchema, value: object, version: int) -> bytes:
    out = bytearray(_VERSION.pack(version))
    schema.encode(out, value, version)
    return bytes(out)


def encode_key(key: RecordKey) -> bytes:
    """The key as Kafka writes it (OffsetCommitKey v1, GroupMetadataKey v2)."""
    version = _KEY_VERSION[type(key)]
    return _encode(_KEY_SCHEMAS[version], key, version)


def encode_value(value: RecordValue, *, version: int | None = None) -> bytes:
    """The value as Kafka 4 writes it (see the module docs), or in another ``version``.

    A ``version`` must carry every field that is not at its default.
    """
    schema = _SCHEMA_OF_VALUE[type(value)]
    if version is None:
        if isinstance(value, GroupMetadataValue):
            version = 3
        else:
            version = 1 if value.expire_timestamp != -1 else 3
    elif not 0 <= version <= _MAX_VALUE_VERSION or not schema.can_encode(value, version):
        raise SchemaError(f"{schema.cls.__name__} version {version} cannot carry {value!r}")
    return _encode(schema, value, version)


def decode_key(data: bytes | memoryview) -> RecordKey:
    """The key of a record; :class:`UnknownRecordTypeError` for other key versions.

    As in Kafka's reader, bytes after the fields of a key or value are ignored.
    """
    reader = ByteReader(data)
    version = reader.unpack(_VERSION)
    schema = _KEY_SCHEMAS.get(version)
    if schema is None:
        raise UnknownRecordTypeError(
            f"__consumer_offsets key version {version} is not a classic group record "
            "(0-1: offset commit, 2: group metadata)"
        )
    key: RecordKey = schema.decode(reader, version)
    return key


@overload
def decode_value(key: OffsetCommitKey, data: bytes | memoryview) -> OffsetCommitValue: ...
@overload
def decode_value(key: GroupMetadataKey, data: bytes | memoryview) -> GroupMetadataValue: ...
@overload
def decode_value(key: RecordKey, data: bytes | memoryview) -> RecordValue: ...
@overload
def decode_value(key: RecordKey, data: bytes | memoryview | None) -> RecordValue | None: ...
def decode_value(key: RecordKey, data: bytes | memoryview | None) -> RecordValue | None:
    """The value of a record with ``key``, in any version Kafka has written; None: a tombstone."""
    if data is None:
        return None
    schema = _VALUE_SCHEMAS[type(key)]
    reader = ByteReader(data)
    version = reader.unpack(_VERSION)
    if not 0 <= version <= _MAX_VALUE_VERSION:
        raise SchemaError(f"unknown {schema.cls.__name__} version {version}")
    value: RecordValue = schema.decode(reader, version)
    return value
