"""The records of ``__transaction_state``, byte for byte as Kafka writes them.

Key and value each start with an int16 version. The key (``TransactionLogKey`` v0) is the
transactional id; the value (``TransactionLogValue``) is the whole state of that id after a
change, so the last record of a key is its state, and a null value (a tombstone) means the id
expired. Value v1 is flexible and adds tagged fields (the previous and next producer id, the
client's transaction version); Kafka writes v0 unless transaction version 2 is enabled, so
strom writes v0 and reads both.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

from strom.protocol.schema import (
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    ArrayType,
    ByteReader,
    Field,
    SchemaError,
    StructSchema,
    StructType,
)

__all__ = [
    "TransactionLogKey",
    "TransactionLogRecord",
    "TransactionLogValue",
    "TxnPartitions",
    "decode_key",
    "decode_value",
    "encode_key",
    "encode_value",
]


@dataclass(frozen=True, slots=True)
class TransactionLogKey:
    transactional_id: str


@dataclass(frozen=True, slots=True)
class TxnPartitions:
    """The partitions of one topic in a transaction."""

    topic: str
    partition_ids: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TransactionLogValue:
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_status: int
    """The state byte (:attr:`strom.coordinator.txn.state.TransactionState.id`)."""
    transaction_partitions: tuple[TxnPartitions, ...] | None
    transaction_last_update_timestamp_ms: int
    transaction_start_timestamp_ms: int
    previous_producer_id: int = -1
    """v1 tagged field 0 (KIP-360: the id before an exhausted epoch forced a new one)."""
    next_producer_id: int = -1
    """v1 tagged field 1 (transaction version 2)."""
    client_transaction_version: int = 0
    """v1 tagged field 2."""


_KEY: Final = StructSchema(
    TransactionLogKey, (Field("transactional_id", STRING),), flexible_from=None
)
_PARTITIONS: Final = StructSchema(
    TxnPartitions,
    (Field("topic", STRING), Field("partition_ids", ArrayType(INT32))),
    flexible_from=1,
)
_VALUE: Final = StructSchema(
    TransactionLogValue,
    (
        Field("producer_id", INT64),
        Field("previous_producer_id", INT64, min_version=1, tag=0, default=-1),
        Field("next_producer_id", INT64, min_version=1, tag=1, default=-1),
        Field("producer_epoch", INT16),
        Field("transaction_timeout_ms", INT32),
        Field("transaction_status", INT8),
        Field("transaction_partitions", ArrayType(StructType(_PARTITIONS), nullable=True)),
        Field("transaction_last_update_timestamp_ms", INT64),
        Field("transaction_start_timestamp_ms", INT64),
        Field("client_transaction_version", INT16, min_version=1, tag=2, default=0),
    ),
    flexible_from=1,
)
_VERSION: Final = struct.Struct(">h")
_KEY_VERSION: Final = 0
_MAX_VALUE_VERSION: Final = 1


@dataclass(frozen=True, slots=True)
class TransactionLogRecord:
    """One record to append: a key and its value (None: a tombstone)."""

    key: TransactionLogKey
    value: TransactionLogValue | None

    def encode(self) -> tuple[bytes, bytes | None]:
        return encode_key(self.key), None if self.value is None else encode_value(self.value)


def encode_key(key: TransactionLogKey) -> bytes:
    out = bytearray(_VERSION.pack(_KEY_VERSION))
    _KEY.encode(out, key, _KEY_VERSION)
    return bytes(out)


def encode_value(value: TransactionLogValue, *, version: int = 0) -> bytes:
    """The value in ``version`` (Kafka's default, 0, drops the v1-only tagged fields)."""
    if not 0 <= version <= _MAX_VALUE_VERSION:
        raise SchemaError(f"unknown TransactionLogValue version {version}")
    out = bytearray(_VERSION.pack(version))
    _VALUE.encode(out, value, version)
    return bytes(out)


def decode_key(data: bytes | memoryview) -> TransactionLogKey:
    """The key; SchemaError for a version other than 0 (bytes after the fields are ignored)."""
    reader = ByteReader(data)
    version = reader.unpack(_VERSION)
    if version != _KEY_VERSION:
        raise SchemaError(f"unknown TransactionLogKey version {version}")
    key: TransactionLogKey = _KEY.decode(reader, version)
    return key


def decode_value(data: bytes | memoryview | None) -> TransactionLogValue | None:
    """The value in any version Kafka has written; None for a tombstone."""
    if data is None:
        return None
    reader = ByteReader(data)
    version = reader.unpack(_VERSION)
    if not 0 <= version <= _MAX_VALUE_VERSION:
        raise SchemaError(f"unknown TransactionLogValue version {version}")
    value: TransactionLogValue = _VALUE.decode(reader, version)
    return value
