"""The API table and the request/response codec: frames in, kio objects out, and back.

* ``ApiKey``: every API Kafka defines (the numbers are the wire's).
* ``KAFKA_BROKER_VERSIONS``: the versions an Apache Kafka 4.0 broker advertises on its client
  listener, per API. It is data: the reference a handler's declared range is checked against.
  Kafka 4.0 dropped the oldest versions (KIP-896), and kio, generated from the same message specs,
  ships exactly from those minimums, which still cover what 0.11-era clients send.
* ``KAFKA_CONTROLLER_VERSIONS``: the same for a Kafka 4.0 controller listener.
* ``decode_request``: a request frame (without its size prefix) -> ``Request`` (kio header and
  body), given the versions the broker serves; raises the ``InvalidRequestError`` family.
* ``encode_response``: a kio response body -> header + body bytes, with the header version the
  body's class calls for (ApiVersions: always v0).

The ApiVersions rule (KIP-511): a request for a version the broker does not implement is still
answered, with a v0 body carrying UNSUPPORTED_VERSION and the supported ranges, so the client can
retry at a version both sides know. Its header can always be read (v2 for any version from 3 on,
see ``headers``), and its body is not read at all, as in Kafka's ``RequestContext``: the request
comes out as an empty ApiVersions v0 body with ``Request.unsupported_version`` set.

Never asyncio: this module is a pure function of its inputs.
"""

from __future__ import annotations

import enum
import io
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from types import MappingProxyType
from typing import Any, Final, cast

from kio.index import load_request_schema, load_response_schema
from kio.schema.api_versions.v0.request import ApiVersionsRequest as ApiVersionsRequestV0
from kio.schema.index import api_key_map
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i16, i32
from kio.static.protocol import RequestPayload, ResponsePayload

from strom.protocol.fetch_request import encode_fetch_request_v15
from strom.protocol.framing import BytesLike
from strom.protocol.headers import (
    InvalidRequestError,
    RequestHeader,
    RequestHeaderV1,
    RequestHeaderV2,
    UnknownApiKeyError,
    UnsupportedVersionError,
    decode_request_header,
    decode_response_header,
    describe_decode_error,
    encode_request_header,
    encode_response_header,
    kio_versions,
    pack_request_header,
    peek_api_key_and_version,
    peek_correlation_id,
    request_header_version,
    response_header_version,
)
from strom.protocol.produce_request import (
    PRODUCE_VIEW_MIN,
    ProduceRequestData,
    decode_produce_request,
)
from strom.protocol.produce_response import encode_produce_response
from strom.protocol.strom_fields import STROM_REQUEST_TYPES

__all__ = [
    "KAFKA_BROKER_VERSIONS",
    "KAFKA_CONTROLLER_VERSIONS",
    "ApiKey",
    "InvalidRequestError",
    "Request",
    "UnknownApiKeyError",
    "UnsupportedVersionError",
    "VersionRange",
    "api_name",
    "decode_request",
    "decode_response",
    "encode_client_request",
    "encode_request",
    "encode_response",
    "kio_version_range",
    "make_request_header",
    "request_type",
    "response_type",
]


class ApiKey(enum.IntEnum):
    """Kafka's API keys, named as in Kafka's ``ApiKeys``."""

    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    WRITE_TXN_MARKERS = 27
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    ALTER_REPLICA_LOG_DIRS = 34
    DESCRIBE_LOG_DIRS = 35
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    CREATE_DELEGATION_TOKEN = 38
    RENEW_DELEGATION_TOKEN = 39
    EXPIRE_DELEGATION_TOKEN = 40
    DESCRIBE_DELEGATION_TOKEN = 41
    DELETE_GROUPS = 42
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    OFFSET_DELETE = 47
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    VOTE = 52
    BEGIN_QUORUM_EPOCH = 53
    END_QUORUM_EPOCH = 54
    DESCRIBE_QUORUM = 55
    ALTER_PARTITION = 56
    UPDATE_FEATURES = 57
    ENVELOPE = 58
    FETCH_SNAPSHOT = 59
    DESCRIBE_CLUSTER = 60
    DESCRIBE_PRODUCERS = 61
    BROKER_REGISTRATION = 62
    BROKER_HEARTBEAT = 63
    UNREGISTER_BROKER = 64
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66
    ALLOCATE_PRODUCER_IDS = 67
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    CONTROLLER_REGISTRATION = 70
    GET_TELEMETRY_SUBSCRIPTIONS = 71
    PUSH_TELEMETRY = 72
    ASSIGN_REPLICAS_TO_DIRS = 73
    LIST_CONFIG_RESOURCES = 74
    DESCRIBE_TOPIC_PARTITIONS = 75
    SHARE_GROUP_HEARTBEAT = 76
    SHARE_GROUP_DESCRIBE = 77
    SHARE_FETCH = 78
    SHARE_ACKNOWLEDGE = 79
    ADD_RAFT_VOTER = 80
    REMOVE_RAFT_VOTER = 81
    UPDATE_RAFT_VOTER = 82
    INITIALIZE_SHARE_GROUP_STATE = 83
    READ_SHARE_GROUP_STATE = 84
    WRITE_SHARE_GROUP_STATE = 85
    DELETE_SHARE_GROUP_STATE = 86
    READ_SHARE_GROUP_STATE_SUMMARY = 87
    STREAMS_GROUP_HEARTBEAT = 88
    STREAMS_GROUP_DESCRIBE = 89
    DESCRIBE_SHARE_GROUP_OFFSETS = 90
    ALTER_SHARE_GROUP_OFFSETS = 91
    DELETE_SHARE_GROUP_OFFSETS = 92


@dataclass(frozen=True, slots=True)
class VersionRange:
    """An inclusive range of API versions, as ApiVersions advertises them."""

    min_version: int
    max_version: int

    def __post_init__(self) -> None:
        if not 0 <= self.min_version <= self.max_version <= 0x7FFF:
            raise ValueError(f"invalid version range {self.min_version}..{self.max_version}")

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.min_version <= version <= self.max_version

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.min_version, self.max_version + 1))

    def __len__(self) -> int:
        return self.max_version - self.min_version + 1

    def issubset(self, other: VersionRange) -> bool:
        return other.min_version <= self.min_version and self.max_version <= other.max_version

    def __str__(self) -> str:
        return f"v{self.min_version}-v{self.max_version}"


def _range(min_version: int, max_version: int) -> VersionRange:
    return VersionRange(min_version, max_version)


KAFKA_BROKER_VERSIONS: Final[Mapping[ApiKey, VersionRange]] = MappingProxyType(
    {
        ApiKey.PRODUCE: _range(3, 12),
        ApiKey.FETCH: _range(4, 17),
        ApiKey.LIST_OFFSETS: _range(1, 10),
        ApiKey.METADATA: _range(0, 13),
        ApiKey.OFFSET_COMMIT: _range(2, 9),
        ApiKey.OFFSET_FETCH: _range(1, 9),
        ApiKey.FIND_COORDINATOR: _range(0, 6),
        ApiKey.JOIN_GROUP: _range(0, 9),
        ApiKey.HEARTBEAT: _range(0, 4),
        ApiKey.LEAVE_GROUP: _range(0, 5),
        ApiKey.SYNC_GROUP: _range(0, 5),
        ApiKey.DESCRIBE_GROUPS: _range(0, 6),
        ApiKey.LIST_GROUPS: _range(0, 5),
        ApiKey.SASL_HANDSHAKE: _range(0, 1),
        ApiKey.API_VERSIONS: _range(0, 4),
        ApiKey.CREATE_TOPICS: _range(2, 7),
        ApiKey.DELETE_TOPICS: _range(1, 6),
        ApiKey.DELETE_RECORDS: _range(0, 2),
        ApiKey.INIT_PRODUCER_ID: _range(0, 5),
        ApiKey.OFFSET_FOR_LEADER_EPOCH: _range(2, 4),
        ApiKey.ADD_PARTITIONS_TO_TXN: _range(0, 5),
        ApiKey.ADD_OFFSETS_TO_TXN: _range(0, 4),
        ApiKey.END_TXN: _range(0, 5),
        ApiKey.WRITE_TXN_MARKERS: _range(1, 1),
        ApiKey.TXN_OFFSET_COMMIT: _range(0, 5),
        ApiKey.DESCRIBE_ACLS: _range(1, 3),
        ApiKey.CREATE_ACLS: _range(1, 3),
        ApiKey.DELETE_ACLS: _range(1, 3),
        ApiKey.DESCRIBE_CONFIGS: _range(1, 4),
        ApiKey.ALTER_CONFIGS: _range(0, 2),
        ApiKey.ALTER_REPLICA_LOG_DIRS: _range(1, 2),
        ApiKey.DESCRIBE_LOG_DIRS: _range(1, 4),
        ApiKey.SASL_AUTHENTICATE: _range(0, 2),
        ApiKey.CREATE_PARTITIONS: _range(0, 3),
        ApiKey.CREATE_DELEGATION_TOKEN: _range(1, 3),
        ApiKey.RENEW_DELEGATION_TOKEN: _range(1, 2),
        ApiKey.EXPIRE_DELEGATION_TOKEN: _range(1, 2),
        ApiKey.DESCRIBE_DELEGATION_TOKEN: _range(1, 3),
        ApiKey.DELETE_GROUPS: _range(0, 2),
        ApiKey.ELECT_LEADERS: _range(0, 2),
        ApiKey.INCREMENTAL_ALTER_CONFIGS: _range(0, 1),
        ApiKey.ALTER_PARTITION_REASSIGNMENTS: _range(0, 0),
        ApiKey.LIST_PARTITION_REASSIGNMENTS: _range(0, 0),
        ApiKey.OFFSET_DELETE: _range(0, 0),
        ApiKey.DESCRIBE_CLIENT_QUOTAS: _range(0, 1),
        ApiKey.ALTER_CLIENT_QUOTAS: _range(0, 1),
        ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: _range(0, 0),
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _range(0, 0),
        ApiKey.DESCRIBE_QUORUM: _range(0, 2),
        ApiKey.UPDATE_FEATURES: _range(0, 1),
        ApiKey.DESCRIBE_CLUSTER: _range(0, 2),
        ApiKey.DESCRIBE_PRODUCERS: _range(0, 0),
        ApiKey.UNREGISTER_BROKER: _range(0, 0),
        ApiKey.DESCRIBE_TRANSACTIONS: _range(0, 0),
        ApiKey.LIST_TRANSACTIONS: _range(0, 1),
        ApiKey.CONSUMER_GROUP_HEARTBEAT: _range(0, 1),
        ApiKey.CONSUMER_GROUP_DESCRIBE: _range(0, 1),
        ApiKey.GET_TELEMETRY_SUBSCRIPTIONS: _range(0, 0),
        ApiKey.PUSH_TELEMETRY: _range(0, 0),
        ApiKey.LIST_CONFIG_RESOURCES: _range(0, 0),
        ApiKey.DESCRIBE_TOPIC_PARTITIONS: _range(0, 0),
        ApiKey.ADD_RAFT_VOTER: _range(0, 0),
        ApiKey.REMOVE_RAFT_VOTER: _range(0, 0),
    }
)
"""What an Apache Kafka 4.0 broker listener advertises (controller-only and early-access APIs
left out). Every range lies within what kio ships (a unit test checks it)."""

KAFKA_CONTROLLER_VERSIONS: Final[Mapping[ApiKey, VersionRange]] = MappingProxyType(
    {
        ApiKey.FETCH: _range(4, 17),
        ApiKey.CREATE_TOPICS: _range(2, 7),
        ApiKey.DELETE_TOPICS: _range(1, 6),
        ApiKey.API_VERSIONS: _range(0, 4),
        ApiKey.DESCRIBE_CONFIGS: _range(1, 4),
        ApiKey.ALTER_CONFIGS: _range(0, 2),
        ApiKey.INCREMENTAL_ALTER_CONFIGS: _range(0, 1),
        ApiKey.CREATE_PARTITIONS: _range(0, 3),
        ApiKey.CREATE_ACLS: _range(1, 3),
        ApiKey.DELETE_ACLS: _range(1, 3),
        ApiKey.DESCRIBE_ACLS: _range(1, 3),
        ApiKey.ELECT_LEADERS: _range(0, 2),
        ApiKey.ALTER_PARTITION_REASSIGNMENTS: _range(0, 0),
        ApiKey.LIST_PARTITION_REASSIGNMENTS: _range(0, 0),
        ApiKey.SASL_HANDSHAKE: _range(0, 1),
        ApiKey.SASL_AUTHENTICATE: _range(0, 2),
        ApiKey.DESCRIBE_CLIENT_QUOTAS: _range(0, 1),
        ApiKey.ALTER_CLIENT_QUOTAS: _range(0, 1),
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS: _range(0, 0),
        ApiKey.VOTE: _range(0, 2),
        ApiKey.BEGIN_QUORUM_EPOCH: _range(0, 1),
        ApiKey.END_QUORUM_EPOCH: _range(0, 1),
        ApiKey.DESCRIBE_QUORUM: _range(0, 2),
        ApiKey.ALTER_PARTITION: _range(2, 3),
        ApiKey.ENVELOPE: _range(0, 0),
        ApiKey.FETCH_SNAPSHOT: _range(0, 1),
        ApiKey.DESCRIBE_CLUSTER: _range(0, 2),
        ApiKey.BROKER_REGISTRATION: _range(0, 4),
        ApiKey.BROKER_HEARTBEAT: _range(0, 1),
        ApiKey.UNREGISTER_BROKER: _range(0, 0),
        ApiKey.ALLOCATE_PRODUCER_IDS: _range(0, 0),
        ApiKey.UPDATE_FEATURES: _range(0, 1),
        ApiKey.CONTROLLER_REGISTRATION: _range(0, 0),
        ApiKey.ADD_RAFT_VOTER: _range(0, 0),
        ApiKey.REMOVE_RAFT_VOTER: _range(0, 0),
        ApiKey.UPDATE_RAFT_VOTER: _range(0, 0),
    }
)
"""What an Apache Kafka 4.0 controller listener serves: the quorum's own APIs, what brokers send
their controller, and the admin requests brokers forward (or ``bootstrap.controllers`` clients
send). Every range lies within what kio ships."""


_API_KEYS: Final[dict[int, ApiKey]] = {int(key): key for key in ApiKey}
"""Each known key's member, by number: a dict lookup instead of the enum's call (~0.3 us)."""
_FAST_FETCH_VERSION: Final = 15
"""The Fetch version written by ``strom.protocol.fetch_request`` (followers' fetches)."""


def kio_version_range(api_key: int) -> VersionRange | None:
    """The request versions kio has a schema for, or None for an API key Kafka does not define."""
    versions = kio_versions().get(api_key)
    return None if versions is None else VersionRange(*versions)


def api_name(api_key: int) -> str:
    """Kafka's name for an API (``ApiVersions``), or ``ApiKey(<n>)`` for an unknown key."""
    name = api_key_map.get(api_key)
    if name is None:
        return f"ApiKey({api_key})"
    return "".join(part.capitalize() for part in name.split("_"))


@cache
def request_type(api_key: int, api_version: int) -> type[RequestPayload]:
    """kio's request class (strom's where it adds tagged fields: ``strom_fields``); raises
    ``UnsupportedVersionError`` if kio has none."""
    strom_type = STROM_REQUEST_TYPES.get((api_key, api_version))
    if strom_type is not None:
        return cast("type[RequestPayload]", strom_type)
    try:
        return load_request_schema(api_key, api_version)
    except Exception:
        raise UnsupportedVersionError(
            f"no schema for {api_name(api_key)} v{api_version} request",
            api_key=api_key,
            api_version=api_version,
        ) from None


@cache
def response_type(api_key: int, api_version: int) -> type[ResponsePayload]:
    """kio's response class; raises ``UnsupportedVersionError`` if kio has none."""
    try:
        return load_response_schema(api_key, api_version)
    except Exception:
        raise UnsupportedVersionError(
            f"no schema for {api_name(api_key)} v{api_version} response",
            api_key=api_key,
            api_version=api_version,
        ) from None


@dataclass(frozen=True, slots=True)
class Request:
    """A decoded request: kio's header and body."""

    header: RequestHeader
    body: RequestPayload | ProduceRequestData
    """kio's body; a Produce body is read without kio where it can be (``produce_request``)."""
    unsupported_version: bool = False
    """Set only for ApiVersions at a version the broker does not implement; ``body`` is then an
    empty ApiVersions v0 request and the answer must be v0 with UNSUPPORTED_VERSION."""
    trailing_bytes: int = 0
    """Bytes after the body, ignored as Kafka ignores them (librdkafka sends some)."""
    size: int = 0
    """The frame's size in bytes (what a producer's quota counts)."""

    @property
    def api_key(self) -> ApiKey:
        return _API_KEYS[self.header.request_api_key]

    @property
    def api_version(self) -> int:
        """The version the client asked for (the header's, even when ``unsupported_version``)."""
        return int(self.header.request_api_version)

    @property
    def correlation_id(self) -> int:
        return int(self.header.correlation_id)

    @property
    def client_id(self) -> str | None:
        return self.header.client_id

    def __str__(self) -> str:
        return (
            f"{api_name(self.api_key)} v{self.api_version} "
            f"(correlation id {self.correlation_id}, client id {self.client_id!r})"
        )


def decode_request(frame: BytesLike, *, versions: Mapping[ApiKey, VersionRange]) -> Request:
    """Decode one request frame (without its size prefix).

    ``versions`` maps each API the broker serves to the versions it implements. Raises
    ``UnknownApiKeyError`` for a key Kafka does not define or the broker does not serve,
    ``UnsupportedVersionError`` for a version outside the served range (except ApiVersions, see
    the module doc), and ``InvalidRequestError`` for a header or body that does not decode.
    Bytes left over after the body are ignored, as Kafka does (``Request.trailing_bytes``).
    """
    api_key, api_version = peek_api_key_and_version(frame)
    correlation_id = peek_correlation_id(frame)
    if api_key not in _API_KEYS:
        raise UnknownApiKeyError(
            f"unknown API key {api_key}",
            api_key=api_key,
            api_version=api_version,
            correlation_id=correlation_id,
        )
    served = versions.get(_API_KEYS[api_key])
    if served is None:
        raise UnknownApiKeyError(
            f"{api_name(api_key)} (key {api_key}) is not served by this broker",
            api_key=api_key,
            api_version=api_version,
            correlation_id=correlation_id,
        )
    header, offset = decode_request_header(
        frame, version=request_header_version(api_key, api_version)
    )
    if api_version not in served:
        if api_key == ApiKey.API_VERSIONS:
            return Request(header=header, body=ApiVersionsRequestV0(), unsupported_version=True)
        raise UnsupportedVersionError(
            f"{api_name(api_key)} v{api_version} is not supported (this broker serves {served})",
            api_key=api_key,
            api_version=api_version,
            correlation_id=correlation_id,
        )
    packed = None
    if api_key == ApiKey.PRODUCE and len(frame) >= PRODUCE_VIEW_MIN:
        packed = decode_produce_request(frame, offset, api_version)
    if packed is not None:  # its records are views of the frame, not kio's copies
        return Request(
            header=header,
            body=packed[0],
            trailing_bytes=len(frame) - offset - packed[1],
            size=len(frame),
        )
    body_type = request_type(api_key, api_version)
    body: RequestPayload | ProduceRequestData
    try:
        body, size = _reader(body_type)(frame, offset)
    except Exception as error:  # kio raises DecodeError, or KeyError for an unknown tag
        raise InvalidRequestError(
            f"cannot decode {api_name(api_key)} v{api_version} request body: "
            + describe_decode_error(error),
            api_key=api_key,
            api_version=api_version,
            correlation_id=correlation_id,
        ) from error
    # Bytes after the body are ignored, as Kafka's RequestContext.parseRequest ignores them:
    # librdkafka's all-topics Metadata request (v9+) carries three stray bytes after its body.
    return Request(
        header=header, body=body, trailing_bytes=len(frame) - offset - size, size=len(frame)
    )


def encode_response(*, correlation_id: int, body: ResponsePayload) -> bytes:
    """Response header (the version ``body``'s class calls for) and body, without size prefix."""
    body_type = type(body)
    header = encode_response_header(
        correlation_id=correlation_id, version=int(body_type.__header_schema__.__version__)
    )
    if int(body.__api_key__) == ApiKey.PRODUCE:  # one per produce request: packed, not walked
        packed = encode_produce_response(body)
        if packed is not None:
            return header + packed
    buffer = io.BytesIO()
    buffer.write(header)
    _writer(body_type)(buffer, body)
    return buffer.getvalue()


def make_request_header(
    body: RequestPayload, *, correlation_id: int, client_id: str | None
) -> RequestHeader:
    """The header (v1 or v2, as ``body``'s version calls for) to send ``body`` with."""
    fields: dict[str, Any] = {
        "request_api_key": i16(body.__api_key__),
        "request_api_version": i16(body.__version__),
        "correlation_id": i32(correlation_id),
        "client_id": client_id,
    }
    if type(body).__header_schema__ is RequestHeaderV2:
        return RequestHeaderV2(**fields)
    return RequestHeaderV1(**fields)


def encode_request(*, header: RequestHeader, body: RequestPayload) -> bytes:
    """Request header and body, without size prefix (clients, tests and golden frames)."""
    body_type = type(body)
    if not isinstance(header, body_type.__header_schema__):
        raise ValueError(
            f"{api_name(body.__api_key__)} v{body.__version__} needs request header "
            f"v{body_type.__header_schema__.__version__}, got v{header.__version__}"
        )
    return encode_request_header(header) + _encode_request_body(body)


def encode_client_request(
    body: RequestPayload, *, correlation_id: int, client_id: str | None
) -> bytes:
    """``encode_request`` with the header ``make_request_header`` would make, packed without
    building kio's header object (what strom's clients send, a follower's fetches among them)."""
    body_type = type(body)
    header = pack_request_header(
        api_key=body_type.__api_key__,
        api_version=body_type.__version__,
        correlation_id=correlation_id,
        client_id=client_id,
        version=body_type.__header_schema__.__version__,
    )
    return header + _encode_request_body(body)


def _encode_request_body(body: RequestPayload) -> bytes:
    body_type = type(body)
    if int(body_type.__api_key__) == ApiKey.FETCH and body_type.__version__ == _FAST_FETCH_VERSION:
        return encode_fetch_request_v15(body)
    buffer = io.BytesIO()
    _writer(body_type)(buffer, body)
    return buffer.getvalue()


def decode_response(
    frame: BytesLike, *, api_key: int, api_version: int, body_type: type[Any] | None = None
) -> tuple[int, Any]:
    """Correlation id and kio body of a response frame (without its size prefix).

    The caller says which API and version it asked for; an ApiVersions answer carrying
    UNSUPPORTED_VERSION is a v0 body whatever the request's version, so decode it with 0.
    ``body_type`` replaces kio's class where kio cannot read what Kafka sends
    (``strom.protocol.lenient``).
    """
    correlation_id, offset = decode_response_header(
        frame, version=response_header_version(api_key, api_version)
    )
    body_class: Any = body_type or response_type(api_key, api_version)
    body, size = _reader(body_class)(frame, offset)
    if offset + size != len(frame):
        raise InvalidRequestError(
            f"{len(frame) - offset - size} unexpected bytes after "
            f"{api_name(api_key)} v{api_version} response body"
        )
    return correlation_id, body


@cache
def _reader(entity_type: type[Any]) -> Any:
    return entity_reader(entity_type)


@cache
def _writer(entity_type: type[Any]) -> Any:
    return entity_writer(entity_type)
