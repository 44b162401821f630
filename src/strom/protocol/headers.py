"""Request and response headers, and Kafka's rules for which header version goes with a message.

Kafka's rules (``ApiMessageType.requestHeaderVersion``/``responseHeaderVersion``):

* a request uses header v2 (v1 plus tagged fields) when its API version is flexible, else v1; the
  header's ``client_id`` is a legacy nullable string even in v2, so that any broker can read it;
* a response uses header v1 (with tagged fields) when the version is flexible, else v0;
* except ApiVersions, whose response header is always v0: a client that does not yet know what the
  broker speaks must be able to read the answer.

(Header v0, without ``client_id``, only ever served ControlledShutdown v0, gone since Kafka 4.0.)
kio generates these facts into each payload class as ``__header_schema__``. For versions kio does
not know the rule still applies: flexibility starts at some version and stays on, so a version
above kio's newest takes the newest version's header and one below its oldest the oldest's. That
is what lets the broker read the header of an ApiVersions request from a newer client.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from functools import cache
from typing import Final, TypeAlias

import kio.schema.request_header.v1 as request_header_v1
import kio.schema.request_header.v2 as request_header_v2
from kio.index import load_request_schema, load_response_schema
from kio.schema.index import api_key_map, schema_name_map
from kio.serial import entity_reader
from kio.static.constants import EntityType

from strom.protocol.framing import BytesLike, ProtocolError

__all__ = [
    "InvalidRequestError",
    "RequestHeader",
    "RequestHeaderV1",
    "RequestHeaderV2",
    "UnknownApiKeyError",
    "UnsupportedVersionError",
    "decode_request_header",
    "decode_response_header",
    "describe_decode_error",
    "encode_request_header",
    "encode_response_header",
    "kio_versions",
    "pack_request_header",
    "peek_api_key_and_version",
    "peek_correlation_id",
    "request_header_version",
    "response_header_version",
]

RequestHeaderV1: TypeAlias = request_header_v1.RequestHeader
RequestHeaderV2: TypeAlias = request_header_v2.RequestHeader
RequestHeader: TypeAlias = RequestHeaderV1 | RequestHeaderV2
"""kio's request header classes: v1 (legacy) and v2 (flexible, with tagged fields)."""

_KEY_AND_VERSION: Final = struct.Struct(">hh")
_KEY_VERSION_CORRELATION: Final = struct.Struct(">hhi")
_CORRELATION_ID: Final = struct.Struct(">i")
_EMPTY_TAGGED_FIELDS: Final = b"\x00"
_STRING_LENGTH: Final = struct.Struct(">h")
_NULL_STRING: Final = _STRING_LENGTH.pack(-1)


class InvalidRequestError(ProtocolError):
    """A request the broker cannot parse; Kafka closes the connection it came on.

    Carries what could be read of the request, for the log line and for answering when the
    protocol says to answer (an unsupported ApiVersions version).
    """

    def __init__(
        self,
        reason: str,
        *,
        api_key: int | None = None,
        api_version: int | None = None,
        correlation_id: int | None = None,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.api_key = api_key
        self.api_version = api_version
        self.correlation_id = correlation_id


class UnknownApiKeyError(InvalidRequestError):
    """An API key that does not exist, or that this broker does not serve."""


class UnsupportedVersionError(InvalidRequestError):
    """A version of a served API outside the range this broker implements."""


@cache
def kio_versions() -> Mapping[int, tuple[int, int]]:
    """API key -> (oldest, newest) request version that kio ships a schema for."""
    result: dict[int, tuple[int, int]] = {}
    for api_key, name in api_key_map.items():
        versions = [
            version
            for version, entities in schema_name_map[name].items()
            if EntityType.request in entities
        ]
        if versions:
            result[api_key] = (min(versions), max(versions))
    return result


def _clamp(api_key: int, api_version: int) -> int:
    try:
        oldest, newest = kio_versions()[api_key]
    except KeyError:
        raise UnknownApiKeyError(
            f"unknown API key {api_key}", api_key=api_key, api_version=api_version
        ) from None
    return min(max(api_version, oldest), newest)


@cache
def request_header_version(api_key: int, api_version: int) -> int:
    """1 or 2; raises ``UnknownApiKeyError`` for an API key Kafka does not define."""
    schema = load_request_schema(api_key, _clamp(api_key, api_version))
    return int(schema.__header_schema__.__version__)


@cache
def response_header_version(api_key: int, api_version: int) -> int:
    """0 or 1 (always 0 for ApiVersions); raises ``UnknownApiKeyError`` for an unknown key."""
    schema = load_response_schema(api_key, _clamp(api_key, api_version))
    return int(schema.__header_schema__.__version__)


def peek_api_key_and_version(frame: BytesLike) -> tuple[int, int]:
    """The first two fields every request header starts with."""
    view = memoryview(frame)
    if len(view) < _KEY_AND_VERSION.size:
        raise InvalidRequestError(f"a {len(view)}-byte frame is too short for a request header")
    api_key, api_version = _KEY_AND_VERSION.unpack_from(view)
    return int(api_key), int(api_version)


def peek_correlation_id(frame: BytesLike) -> int | None:
    """The request's correlation id, if the frame is long enough to hold one."""
    view = memoryview(frame)
    if len(view) < _KEY_VERSION_CORRELATION.size:
        return None
    return int(_KEY_VERSION_CORRELATION.unpack_from(view)[2])


def decode_request_header(frame: BytesLike, *, version: int) -> tuple[RequestHeader, int]:
    """Read a v1 or v2 request header from the start of ``frame``; returns it and its size."""
    header_type: type[RequestHeader] = RequestHeaderV2 if version == 2 else RequestHeaderV1
    try:
        header, size = entity_reader(header_type)(frame, 0)
    except Exception as error:  # kio raises DecodeError, or KeyError for unknown tags
        api_key, api_version = peek_api_key_and_version(frame)
        raise InvalidRequestError(
            f"cannot decode request header v{version}: {describe_decode_error(error)}",
            api_key=api_key,
            api_version=api_version,
            correlation_id=peek_correlation_id(frame),
        ) from error
    return header, size


def encode_request_header(header: RequestHeader) -> bytes:
    """kio's request header object in its wire form."""
    return pack_request_header(
        api_key=header.request_api_key,
        api_version=header.request_api_version,
        correlation_id=header.correlation_id,
        client_id=header.client_id,
        version=2 if isinstance(header, RequestHeaderV2) else 1,
    )


def pack_request_header(
    *, api_key: int, api_version: int, correlation_id: int, client_id: str | None, version: int
) -> bytes:
    """Request header v1, or v2 (plus an empty tagged-field section), packed with ``struct``.

    Every request a strom client sends (a follower's fetches among them) carries one; kio's
    header object and writer took ~10 us for it, this under 1 us. The unit tests check it
    against kio byte for byte.
    """
    fixed = _KEY_VERSION_CORRELATION.pack(api_key, api_version, correlation_id)
    if client_id is None:
        packed = fixed + _NULL_STRING
    else:
        name = client_id.encode()
        packed = fixed + _STRING_LENGTH.pack(len(name)) + name
    if version == 2:
        return packed + _EMPTY_TAGGED_FIELDS
    if version == 1:
        return packed
    raise ValueError(f"no request header version {version}")


def encode_response_header(*, correlation_id: int, version: int) -> bytes:
    """Response header v0 (correlation id) or v1 (plus an empty tagged-field section).

    Packed by hand rather than through kio's writer: it runs for every response, and the unit
    tests check it against kio byte for byte.
    """
    if version == 0:
        return _CORRELATION_ID.pack(correlation_id)
    if version == 1:
        return _CORRELATION_ID.pack(correlation_id) + _EMPTY_TAGGED_FIELDS
    raise ValueError(f"no response header version {version}")


def decode_response_header(frame: BytesLike, *, version: int) -> tuple[int, int]:
    """Returns the correlation id and the header's size (for a client reading a response)."""
    view = memoryview(frame)
    if len(view) < _CORRELATION_ID.size + (1 if version == 1 else 0):
        raise ProtocolError(f"a {len(view)}-byte frame is too short for a response header")
    (correlation_id,) = _CORRELATION_ID.unpack_from(view)
    if version == 0:
        return int(correlation_id), _CORRELATION_ID.size
    if view[_CORRELATION_ID.size] != 0:
        raise ProtocolError("response header v1 with tagged fields is not supported")
    return int(correlation_id), _CORRELATION_ID.size + 1


def describe_decode_error(error: Exception) -> str:
    """One phrase for what kio raised while decoding."""
    if isinstance(error, KeyError):
        # kio's reader has no way to skip a tag it does not know ("Unknown tagged field tag: 9");
        # Kafka skips them. Until kio can, such a request is one the broker cannot parse.
        text = str(error.args[0]) if error.args else ""
        tag = text.rpartition(" ")[2]
        what = tag if tag.isdigit() else repr(text)
        return f"unknown tagged field {what} (kio cannot skip it)"
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
