"""The metadata records, defined once as data, and their binary encoding.

The record types, their api keys, fields, versions and tags are Kafka's KRaft records
(``metadata/src/main/resources/common/metadata/*.json``), so a strom metadata log holds the same
bytes Kafka would write for the same records. A record in the log is framed as Kafka's
``MetadataRecordSerde`` frames it::

    [uvarint frame version = 1][uvarint api key][uvarint record version][fields]

and the fields use Kafka's flexible-version message encoding (:mod:`strom.protocol.schema`).
``encode_record`` picks the lowest version that can carry the record's values (fields that are
newer than a version must hold their defaults), which is what Kafka writes when the newer
features are off; ``decode_record`` reads every version listed here.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from strom.protocol.schema import (
    BOOL,
    BYTES,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    NULLABLE_STRING,
    STRING,
    UINT16,
    UUID,
    ArrayType,
    ByteReader,
    Field,
    SchemaError,
    StructSchema,
    StructType,
    write_uvarint,
)

__all__ = [
    "ELIGIBLE_LEADER_REPLICAS_FEATURE",
    "METADATA_VERSION_FEATURE",
    "NO_LEADER",
    "NO_LEADER_CHANGE",
    "AccessControlEntryRecord",
    "BrokerEndpoint",
    "BrokerFeature",
    "BrokerRegistrationChangeRecord",
    "ClientQuotaRecord",
    "ConfigRecord",
    "ConfigResourceType",
    "EntityData",
    "FeatureLevelRecord",
    "FenceBrokerRecord",
    "FencingChange",
    "LeaderRecoveryState",
    "MetadataRecord",
    "MetadataRecordError",
    "NoOpRecord",
    "PartitionChangeRecord",
    "PartitionRecord",
    "ProducerIdsRecord",
    "RecordType",
    "RegisterBrokerRecord",
    "RemoveAccessControlEntryRecord",
    "RemoveTopicRecord",
    "RemoveUserScramCredentialRecord",
    "SecurityProtocol",
    "TopicRecord",
    "UnfenceBrokerRecord",
    "UnregisterBrokerRecord",
    "UserScramCredentialRecord",
    "decode_record",
    "encode_record",
    "record_type_of",
]

MetadataRecordError = SchemaError
"""Bytes that are not a metadata record strom can read, or a record it cannot write."""

FRAME_VERSION: Final = 1
METADATA_VERSION_FEATURE: Final = "metadata.version"
ELIGIBLE_LEADER_REPLICAS_FEATURE: Final = "eligible.leader.replicas.version"
"""Level 1: the controller keeps eligible leader replicas (KIP-966)."""
NO_LEADER: Final = -1
"""A partition without a leader."""
NO_LEADER_CHANGE: Final = -2
"""PartitionChangeRecord.leader when the leader stays as it is."""

_I32 = ArrayType(INT32)
_NULLABLE_I32 = ArrayType(INT32, nullable=True)
_UUIDS = ArrayType(UUID)
_NULLABLE_UUIDS = ArrayType(UUID, nullable=True)


class ConfigResourceType(enum.IntEnum):
    """Kafka's ConfigResource.Type ids, as ConfigRecord and the config APIs carry them."""

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


class SecurityProtocol(enum.IntEnum):
    PLAINTEXT = 0
    SSL = 1
    SASL_PLAINTEXT = 2
    SASL_SSL = 3


class LeaderRecoveryState(enum.IntEnum):
    NO_CHANGE = -1
    """Only in PartitionChangeRecord: the state stays as it is."""
    RECOVERED = 0
    RECOVERING = 1


class FencingChange(enum.IntEnum):
    """BrokerRegistrationChangeRecord.fenced."""

    UNFENCE = -1
    NONE = 0
    FENCE = 1


@dataclass(frozen=True, slots=True)
class BrokerEndpoint:
    """A listener of a broker: its name (e.g. PLAINTEXT), host and port."""

    name: str
    host: str
    port: int
    security_protocol: int = SecurityProtocol.PLAINTEXT


@dataclass(frozen=True, slots=True)
class BrokerFeature:
    name: str
    min_supported_version: int
    max_supported_version: int


@dataclass(frozen=True, slots=True)
class RegisterBrokerRecord:
    """A broker joined (or re-joined) the cluster; ``broker_epoch`` identifies this session."""

    broker_id: int
    incarnation_id: uuid.UUID
    broker_epoch: int
    endpoints: tuple[BrokerEndpoint, ...]
    features: tuple[BrokerFeature, ...] = ()
    rack: str | None = None
    fenced: bool = True
    in_controlled_shutdown: bool = False
    is_migrating_zk_broker: bool = False
    log_dirs: tuple[uuid.UUID, ...] = ()


@dataclass(frozen=True, slots=True)
class UnregisterBrokerRecord:
    broker_id: int
    broker_epoch: int


@dataclass(frozen=True, slots=True)
class TopicRecord:
    name: str
    topic_id: uuid.UUID


@dataclass(frozen=True, slots=True)
class PartitionRecord:
    """A partition's whole registration; replicas in preferred order, the first preferred."""

    partition_id: int
    topic_id: uuid.UUID
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    leader_recovery_state: int = LeaderRecoveryState.RECOVERED
    directories: tuple[uuid.UUID, ...] = ()
    eligible_leader_replicas: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class ConfigRecord:
    """Set (or, with ``value`` None, delete) one config of one resource."""

    resource_type: int
    resource_name: str
    name: str
    value: str | None


@dataclass(frozen=True, slots=True)
class PartitionChangeRecord:
    """A change to a partition; None (or the NO_* constants) means "unchanged"."""

    partition_id: int
    topic_id: uuid.UUID
    isr: tuple[int, ...] | None = None
    leader: int = NO_LEADER_CHANGE
    replicas: tuple[int, ...] | None = None
    removing_replicas: tuple[int, ...] | None = None
    adding_replicas: tuple[int, ...] | None = None
    leader_recovery_state: int = LeaderRecoveryState.NO_CHANGE
    directories: tuple[uuid.UUID, ...] | None = None
    eligible_leader_replicas: tuple[int, ...] | None = None
    last_known_elr: tuple[int, ...] | None = None


@dataclass(frozen=True, slots=True)
class FenceBrokerRecord:
    id: int
    epoch: int


@dataclass(frozen=True, slots=True)
class UnfenceBrokerRecord:
    id: int
    epoch: int


@dataclass(frozen=True, slots=True)
class RemoveTopicRecord:
    """Remove a topic, its partitions and its configs."""

    topic_id: uuid.UUID


@dataclass(frozen=True, slots=True)
class FeatureLevelRecord:
    """Finalize a feature at a level; level 0 removes the feature."""

    name: str
    feature_level: int


@dataclass(frozen=True, slots=True)
class ProducerIdsRecord:
    """A block of producer ids was handed out; ``next_producer_id`` is the next block's first."""

    broker_id: int
    broker_epoch: int
    next_producer_id: int


@dataclass(frozen=True, slots=True)
class BrokerRegistrationChangeRecord:
    broker_id: int
    broker_epoch: int
    fenced: int = FencingChange.NONE
    in_controlled_shutdown: int = 0
    """0 for no change, 1 when the broker entered controlled shutdown."""
    log_dirs: tuple[uuid.UUID, ...] = ()


@dataclass(frozen=True, slots=True)
class UserScramCredentialRecord:
    """A user's SCRAM credential for one mechanism (1: SCRAM-SHA-256, 2: SCRAM-SHA-512)."""

    name: str
    mechanism: int
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def __repr__(self) -> str:
        return f"UserScramCredentialRecord(name={self.name!r}, mechanism={self.mechanism})"


@dataclass(frozen=True, slots=True)
class RemoveUserScramCredentialRecord:
    name: str
    mechanism: int


@dataclass(frozen=True, slots=True)
class AccessControlEntryRecord:
    """One ACL (``strom.security.acls.AclBinding``'s fields as their wire codes) and its id."""

    id: uuid.UUID
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


@dataclass(frozen=True, slots=True)
class RemoveAccessControlEntryRecord:
    id: uuid.UUID


@dataclass(frozen=True, slots=True)
class EntityData:
    """One part of a quota entity: ``user`` or ``client-id``, and a name (None: the default)."""

    entity_type: str
    entity_name: str | None


@dataclass(frozen=True, slots=True)
class ClientQuotaRecord:
    """Sets (or, with ``remove``, removes) one quota of one entity."""

    entity: tuple[EntityData, ...]
    key: str
    value: float
    remove: bool = False


@dataclass(frozen=True, slots=True)
class NoOpRecord:
    """Advances the log (and the high watermark) without changing anything."""


MetadataRecord = (
    RegisterBrokerRecord
    | UnregisterBrokerRecord
    | TopicRecord
    | PartitionRecord
    | ConfigRecord
    | PartitionChangeRecord
    | FenceBrokerRecord
    | UnfenceBrokerRecord
    | RemoveTopicRecord
    | FeatureLevelRecord
    | ProducerIdsRecord
    | BrokerRegistrationChangeRecord
    | UserScramCredentialRecord
    | RemoveUserScramCredentialRecord
    | AccessControlEntryRecord
    | RemoveAccessControlEntryRecord
    | ClientQuotaRecord
    | NoOpRecord
)


@dataclass(frozen=True, slots=True)
class RecordType:
    """One metadata record type: Kafka's api key, the versions strom reads, the schema."""

    api_key: int
    max_version: int
    schema: StructSchema

    @property
    def name(self) -> str:
        return self.schema.cls.__name__


def _record_type(api_key: int, max_version: int, cls: type, *fields: Field) -> RecordType:
    return RecordType(api_key, max_version, StructSchema(cls, fields))


_ENDPOINT = StructType(
    StructSchema(
        BrokerEndpoint,
        [
            Field("name", STRING),
            Field("host", STRING),
            Field("port", UINT16),
            Field("security_protocol", INT16),
        ],
    )
)
_FEATURE = StructType(
    StructSchema(
        BrokerFeature,
        [
            Field("name", STRING),
            Field("min_supported_version", INT16),
            Field("max_supported_version", INT16),
        ],
    )
)

_ENTITY_DATA = StructType(
    StructSchema(EntityData, [Field("entity_type", STRING), Field("entity_name", NULLABLE_STRING)])
)

_RECORD_TYPES: Final = (
    _record_type(
        0,
        3,
        RegisterBrokerRecord,
        Field("broker_id", INT32),
        Field("is_migrating_zk_broker", BOOL, min_version=2),
        Field("incarnation_id", UUID),
        Field("broker_epoch", INT64),
        Field("endpoints", ArrayType(_ENDPOINT)),
        Field("features", ArrayType(_FEATURE)),
        Field("rack", NULLABLE_STRING),
        Field("fenced", BOOL),
        Field("in_controlled_shutdown", BOOL, min_version=1),
        Field("log_dirs", _UUIDS, min_version=3, tag=0),
    ),
    _record_type(
        1,
        0,
        UnregisterBrokerRecord,
        Field("broker_id", INT32),
        Field("broker_epoch", INT64),
    ),
    _record_type(2, 0, TopicRecord, Field("name", STRING), Field("topic_id", UUID)),
    _record_type(
        3,
        2,
        PartitionRecord,
        Field("partition_id", INT32),
        Field("topic_id", UUID),
        Field("replicas", _I32),
        Field("isr", _I32),
        Field("removing_replicas", _I32),
        Field("adding_replicas", _I32),
        Field("leader", INT32),
        Field("leader_recovery_state", INT8, tag=0),
        Field("leader_epoch", INT32),
        Field("partition_epoch", INT32),
        Field("directories", _UUIDS, min_version=1),
        Field("eligible_leader_replicas", _NULLABLE_I32, min_version=2, tag=1),
        Field("last_known_elr", _NULLABLE_I32, min_version=2, tag=2),
    ),
    _record_type(
        4,
        0,
        ConfigRecord,
        Field("resource_type", INT8),
        Field("resource_name", STRING),
        Field("name", STRING),
        Field("value", NULLABLE_STRING),
    ),
    _record_type(
        5,
        2,
        PartitionChangeRecord,
        Field("partition_id", INT32),
        Field("topic_id", UUID),
        Field("isr", _NULLABLE_I32, tag=0),
        Field("leader", INT32, tag=1),
        Field("replicas", _NULLABLE_I32, tag=2),
        Field("removing_replicas", _NULLABLE_I32, tag=3),
        Field("adding_replicas", _NULLABLE_I32, tag=4),
        Field("leader_recovery_state", INT8, tag=5),
        Field("directories", _NULLABLE_UUIDS, min_version=1, tag=8),
        Field("eligible_leader_replicas", _NULLABLE_I32, min_version=2, tag=6),
        Field("last_known_elr", _NULLABLE_I32, min_version=2, tag=7),
    ),
    _record_type(7, 0, FenceBrokerRecord, Field("id", INT32), Field("epoch", INT64)),
    _record_type(8, 0, UnfenceBrokerRecord, Field("id", INT32), Field("epoch", INT64)),
    _record_type(9, 0, RemoveTopicRecord, Field("topic_id", UUID)),
    _record_type(
        11,
        0,
        UserScramCredentialRecord,
        Field("name", STRING),
        Field("mechanism", INT8),
        Field("salt", BYTES),
        Field("stored_key", BYTES),
        Field("server_key", BYTES),
        Field("iterations", INT32),
    ),
    _record_type(12, 0, FeatureLevelRecord, Field("name", STRING), Field("feature_level", INT16)),
    _record_type(
        14,
        0,
        ClientQuotaRecord,
        Field("entity", ArrayType(_ENTITY_DATA)),
        Field("key", STRING),
        Field("value", FLOAT64),
        Field("remove", BOOL),
    ),
    _record_type(
        15,
        0,
        ProducerIdsRecord,
        Field("broker_id", INT32),
        Field("broker_epoch", INT64),
        Field("next_producer_id", INT64),
    ),
    _record_type(
        17,
        2,
        BrokerRegistrationChangeRecord,
        Field("broker_id", INT32),
        Field("broker_epoch", INT64),
        Field("fenced", INT8, tag=0),
        Field("in_controlled_shutdown", INT8, min_version=1, tag=1),
        Field("log_dirs", _UUIDS, min_version=2, tag=2),
    ),
    _record_type(
        18,
        0,
        AccessControlEntryRecord,
        Field("id", UUID),
        Field("resource_type", INT8),
        Field("resource_name", STRING),
        Field("pattern_type", INT8),
        Field("principal", STRING),
        Field("host", STRING),
        Field("operation", INT8),
        Field("permission_type", INT8),
    ),
    _record_type(19, 0, RemoveAccessControlEntryRecord, Field("id", UUID)),
    _record_type(20, 0, NoOpRecord),
    _record_type(
        22, 0, RemoveUserScramCredentialRecord, Field("name", STRING), Field("mechanism", INT8)
    ),
)

RECORD_TYPES: Final[Mapping[int, RecordType]] = {rt.api_key: rt for rt in _RECORD_TYPES}
"""Every record type strom reads and writes, by Kafka api key."""
_BY_CLASS: Final[Mapping[type, RecordType]] = {rt.schema.cls: rt for rt in _RECORD_TYPES}


def record_type_of(record: MetadataRecord) -> RecordType:
    try:
        return _BY_CLASS[type(record)]
    except KeyError:
        raise MetadataRecordError(f"not a metadata record: {record!r}") from None


def encode_record(record: MetadataRecord, *, version: int | None = None) -> bytes:
    """The framed bytes of one record; ``version`` defaults to the lowest that carries it."""
    record_type = record_type_of(record)
    schema = record_type.schema
    if version is None:
        version = next(
            (v for v in range(record_type.max_version + 1) if schema.can_encode(record, v)),
            None,
        )
        if version is None:  # pragma: no cover - the highest version carries every field
            raise MetadataRecordError(f"no version of {record_type.name} can carry {record!r}")
    elif not 0 <= version <= record_type.max_version:
        raise MetadataRecordError(f"{record_type.name} has no version {version}")
    elif not schema.can_encode(record, version):
        raise MetadataRecordError(
            f"version {version} of {record_type.name} cannot carry the fields set in {record!r}"
        )
    out = bytearray()
    write_uvarint(out, FRAME_VERSION)
    write_uvarint(out, record_type.api_key)
    write_uvarint(out, version)
    schema.encode(out, record, version)
    return bytes(out)


def decode_record(data: bytes | memoryview) -> MetadataRecord:
    """Read one framed record; MetadataRecordError names what is wrong with the bytes."""
    reader = ByteReader(data)
    frame_version = reader.uvarint()
    if frame_version != FRAME_VERSION:
        raise MetadataRecordError(f"unknown metadata record frame version {frame_version}")
    api_key = reader.uvarint()
    record_type = RECORD_TYPES.get(api_key)
    if record_type is None:
        raise MetadataRecordError(f"unknown metadata record type {api_key}")
    version = reader.uvarint()
    if version > record_type.max_version:
        raise MetadataRecordError(
            f"{record_type.name} version {version} is newer than strom reads "
            f"(up to {record_type.max_version})"
        )
    record: MetadataRecord = record_type.schema.decode(reader, version)
    reader.expect_end()
    return record
