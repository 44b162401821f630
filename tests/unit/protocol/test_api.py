"""The API table, header version rules and the request/response codec."""

from __future__ import annotations

import dataclasses
import datetime
import io
import struct
import uuid
from types import NoneType, UnionType
from typing import Any, Union, get_args, get_origin

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.api_versions.v0 import ApiVersionsRequest as ApiVersionsRequestV0
from kio.schema.api_versions.v3 import ApiVersionsRequest as ApiVersionsRequestV3
from kio.schema.errors import ErrorCode
from kio.schema.index import api_key_map
from kio.schema.metadata.v12 import MetadataRequest as MetadataRequestV12
from kio.serial import entity_writer
from kio.static.primitive import Records, i16, i32

from strom.protocol.api import (
    KAFKA_BROKER_VERSIONS,
    KAFKA_CONTROLLER_VERSIONS,
    ApiKey,
    InvalidRequestError,
    UnknownApiKeyError,
    UnsupportedVersionError,
    VersionRange,
    api_name,
    decode_request,
    decode_response,
    encode_client_request,
    encode_request,
    encode_response,
    kio_version_range,
    make_request_header,
    request_type,
    response_type,
)
from strom.protocol.headers import (
    RequestHeaderV1,
    RequestHeaderV2,
    encode_request_header,
    encode_response_header,
    request_header_version,
    response_header_version,
)
from strom.protocol.produce_request import ProduceRequestData, as_kio

ALL_VERSIONS = [
    (api_key, version)
    for api_key, versions in KAFKA_BROKER_VERSIONS.items()
    for version in versions
]


def _ids(pair: tuple[ApiKey, int]) -> str:
    return f"{api_name(pair[0])}-v{pair[1]}"


# A deterministic, fully populated example of any kio entity: every field (tagged ones too) gets
# a non-default value and every array one element, so a round trip exercises every field.


def _primitive(kafka_type: str) -> object:
    values: dict[str, object] = {
        "int8": 7,
        "int16": 300,
        "int32": 70_000,
        "int64": 5_000_000_000,
        "uint8": 200,
        "uint16": 60_000,
        "uint32": 4_000_000_000,
        "uint64": 2**63 + 5,
        "float64": 1.5,
        "bool": True,
        "string": "strom",
        "bytes": b"\x00\x01\xff",
        "records": b"\x00\x01\x02\x03",
        "uuid": uuid.UUID("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"),
        "error_code": ErrorCode.corrupt_message,
        "timedelta_i32": datetime.timedelta(milliseconds=1500),
        "timedelta_i64": datetime.timedelta(milliseconds=86_400_123),
        "datetime_i64": datetime.datetime(2024, 5, 6, 7, 8, 9, 123000, tzinfo=datetime.UTC),
    }
    return values[kafka_type]


def _value(annotation: Any, field: dataclasses.Field[Any]) -> object:
    origin = get_origin(annotation)
    if origin in (UnionType, Union):
        (inner,) = (arg for arg in get_args(annotation) if arg is not NoneType)
        return _value(inner, field)
    if origin is tuple:
        return (_value(get_args(annotation)[0], field),)
    if dataclasses.is_dataclass(annotation):
        return sample(annotation)
    return _primitive(field.metadata["kafka_type"])


def sample(entity_type: Any) -> Any:
    values = {
        field.name: _value(field.type, field)
        for field in dataclasses.fields(entity_type)
        if not field.name.startswith("_")
    }
    return entity_type(**values)


def test_api_key_enum_is_kafkas_list() -> None:
    assert {key.value: key.name.lower() for key in ApiKey} == dict(api_key_map)


def test_controller_table_lies_within_what_kio_ships() -> None:
    for api_key, versions in KAFKA_CONTROLLER_VERSIONS.items():
        shipped = kio_version_range(api_key)
        assert shipped is not None, api_key
        assert versions.issubset(shipped), (api_key, versions, shipped)


def test_broker_table_lies_within_what_kio_ships() -> None:
    for api_key, versions in KAFKA_BROKER_VERSIONS.items():
        shipped = kio_version_range(api_key)
        assert shipped is not None, api_key
        assert versions.issubset(shipped), (api_key, versions, shipped)
        # Kafka 4 dropped the oldest versions; kio ships from exactly those minimums.
        assert versions.min_version == shipped.min_version, api_key


def test_table_spot_checks() -> None:
    assert KAFKA_BROKER_VERSIONS[ApiKey.API_VERSIONS] == VersionRange(0, 4)
    assert KAFKA_BROKER_VERSIONS[ApiKey.PRODUCE].min_version == 3  # v2 batches only (KIP-896)
    assert KAFKA_BROKER_VERSIONS[ApiKey.FETCH].min_version == 4
    assert KAFKA_BROKER_VERSIONS[ApiKey.METADATA].min_version == 0
    assert 0 in KAFKA_BROKER_VERSIONS[ApiKey.METADATA]
    assert 14 not in KAFKA_BROKER_VERSIONS[ApiKey.METADATA]


def test_version_range() -> None:
    versions = VersionRange(2, 4)
    assert list(versions) == [2, 3, 4]
    assert 1 not in versions
    assert "3" not in versions
    assert str(versions) == "v2-v4"
    assert VersionRange(3, 3).issubset(versions)
    assert not VersionRange(1, 3).issubset(versions)
    with pytest.raises(ValueError, match="invalid version range"):
        VersionRange(5, 4)


def test_api_name() -> None:
    assert api_name(18) == "ApiVersions"
    assert api_name(23) == "OffsetForLeaderEpoch"
    assert api_name(999) == "ApiKey(999)"


@pytest.mark.parametrize(
    ("api_key", "version", "request_header", "response_header"),
    [
        (ApiKey.PRODUCE, 8, 1, 0),
        (ApiKey.PRODUCE, 9, 2, 1),
        (ApiKey.FETCH, 11, 1, 0),
        (ApiKey.FETCH, 12, 2, 1),
        (ApiKey.METADATA, 0, 1, 0),
        (ApiKey.METADATA, 9, 2, 1),
        (ApiKey.API_VERSIONS, 0, 1, 0),
        (ApiKey.API_VERSIONS, 2, 1, 0),
        # ApiVersions: flexible from v3 but its response header stays v0 (no tagged fields)
        (ApiKey.API_VERSIONS, 3, 2, 0),
        (ApiKey.API_VERSIONS, 4, 2, 0),
        # versions kio does not know follow the nearest known one: a newer client's header
        (ApiKey.API_VERSIONS, 127, 2, 0),
        (ApiKey.API_VERSIONS, -1, 1, 0),
        (ApiKey.DESCRIBE_CLUSTER, 0, 2, 1),
        (ApiKey.OFFSET_DELETE, 0, 1, 0),
    ],
)
def test_header_versions(
    api_key: ApiKey, version: int, request_header: int, response_header: int
) -> None:
    assert request_header_version(api_key, version) == request_header
    assert response_header_version(api_key, version) == response_header


def test_header_version_of_unknown_api_key() -> None:
    with pytest.raises(UnknownApiKeyError):
        request_header_version(999, 0)


@pytest.mark.parametrize("pair", ALL_VERSIONS, ids=_ids)
def test_header_versions_follow_flexibility(pair: tuple[ApiKey, int]) -> None:
    api_key, version = pair
    flexible = request_type(api_key, version).__flexible__
    assert request_header_version(api_key, version) == (2 if flexible else 1)
    expected_response = 0 if api_key == ApiKey.API_VERSIONS else int(flexible)
    assert response_header_version(api_key, version) == expected_response


@pytest.mark.parametrize(("correlation_id", "version"), [(0, 0), (7, 0), (-1, 1), (2**31 - 1, 1)])
def test_response_header_bytes_match_kio(correlation_id: int, version: int) -> None:
    from kio.schema.response_header.v0 import ResponseHeader as ResponseHeaderV0  # noqa: PLC0415
    from kio.schema.response_header.v1 import ResponseHeader as ResponseHeaderV1  # noqa: PLC0415

    buffer = io.BytesIO()
    if version == 0:
        entity_writer(ResponseHeaderV0)(
            buffer, ResponseHeaderV0(correlation_id=i32(correlation_id))
        )
    else:
        entity_writer(ResponseHeaderV1)(
            buffer, ResponseHeaderV1(correlation_id=i32(correlation_id))
        )
    assert encode_response_header(correlation_id=correlation_id, version=version) == (
        buffer.getvalue()
    )


def kio_body(body: Any, entity: type[Any]) -> Any:
    """A decoded body as kio's ``entity`` (Produce bodies are read without kio)."""
    return as_kio(body, entity) if isinstance(body, ProduceRequestData) else body


@pytest.mark.parametrize("pair", ALL_VERSIONS, ids=_ids)
def test_request_round_trip_every_api_and_version(pair: tuple[ApiKey, int]) -> None:
    api_key, version = pair
    body = sample(request_type(api_key, version))
    header = make_request_header(body, correlation_id=42, client_id="golden-client")
    frame = encode_request(header=header, body=body)
    decoded = decode_request(frame, versions=KAFKA_BROKER_VERSIONS)
    assert decoded.header == header
    decoded_body = kio_body(decoded.body, type(body))
    assert decoded_body == body
    assert decoded.api_key == api_key
    assert decoded.api_version == version
    assert decoded.correlation_id == 42
    assert decoded.client_id == "golden-client"
    assert not decoded.unsupported_version
    assert encode_request(header=decoded.header, body=decoded_body) == frame


@pytest.mark.parametrize("pair", ALL_VERSIONS, ids=_ids)
def test_response_round_trip_every_api_and_version(pair: tuple[ApiKey, int]) -> None:
    api_key, version = pair
    body = sample(response_type(api_key, version))
    frame = encode_response(correlation_id=-5, body=body)
    header_size = 4 + response_header_version(api_key, version)
    assert frame[:4] == struct.pack(">i", -5)
    if header_size == 5:
        assert frame[4] == 0  # empty tagged fields
    correlation_id, decoded = decode_response(frame, api_key=api_key, api_version=version)
    assert correlation_id == -5
    assert decoded == body


# Random entities with every array held to two elements: hypothesis's own from_type builds
# unbounded nested arrays, which now and then takes minutes on a slow machine.

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
_PRIMITIVES: dict[str, st.SearchStrategy[Any]] = {
    "int8": st.integers(-(2**7), 2**7 - 1),
    "int16": st.integers(-(2**15), 2**15 - 1),
    "int32": st.integers(-(2**31), 2**31 - 1),
    "int64": st.integers(-(2**63), 2**63 - 1),
    "uint8": st.integers(0, 2**8 - 1),
    "uint16": st.integers(0, 2**16 - 1),
    "uint32": st.integers(0, 2**32 - 1),
    "uint64": st.integers(0, 2**64 - 1),
    "float64": st.floats(allow_nan=False),
    "bool": st.booleans(),
    "string": st.text(max_size=8),
    "bytes": st.binary(max_size=8),
    "records": st.binary(max_size=16).map(Records),
    "uuid": st.uuids(),
    "error_code": st.sampled_from(ErrorCode),
    "timedelta_i32": st.integers(0, 2**31 - 1).map(lambda ms: datetime.timedelta(milliseconds=ms)),
    "timedelta_i64": st.integers(0, 2**40).map(lambda ms: datetime.timedelta(milliseconds=ms)),
    "datetime_i64": st.integers(0, 2**42).map(
        lambda ms: _EPOCH + datetime.timedelta(milliseconds=ms)
    ),
}


def _field_strategy(annotation: Any, field: dataclasses.Field[Any]) -> st.SearchStrategy[Any]:
    origin = get_origin(annotation)
    if origin in (UnionType, Union):
        (inner,) = (arg for arg in get_args(annotation) if arg is not NoneType)
        return st.none() | _field_strategy(inner, field)
    if origin is tuple:
        element = _field_strategy(get_args(annotation)[0], field)
        return st.lists(element, max_size=2).map(tuple)
    if dataclasses.is_dataclass(annotation):
        return entities(annotation)
    return _PRIMITIVES[field.metadata["kafka_type"]]


def entities(entity_type: Any) -> st.SearchStrategy[Any]:
    fields = {
        field.name: _field_strategy(field.type, field)
        for field in dataclasses.fields(entity_type)
        if not field.name.startswith("_")
    }
    return st.builds(entity_type, **fields)


REPRESENTATIVE = [
    (ApiKey.API_VERSIONS, version) for version in KAFKA_BROKER_VERSIONS[ApiKey.API_VERSIONS]
] + [
    (ApiKey.METADATA, 0),
    (ApiKey.METADATA, 8),
    (ApiKey.METADATA, 12),
    (ApiKey.METADATA, 13),
    (ApiKey.PRODUCE, 3),
    (ApiKey.PRODUCE, 8),
    (ApiKey.PRODUCE, 9),
    (ApiKey.PRODUCE, 12),
    (ApiKey.FETCH, 4),
    (ApiKey.FETCH, 11),
    (ApiKey.FETCH, 12),
    (ApiKey.FETCH, 17),
]


@pytest.mark.parametrize("pair", REPRESENTATIVE, ids=_ids)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_codec_round_trips_random_messages(pair: tuple[ApiKey, int], data: st.DataObject) -> None:
    api_key, version = pair
    body = data.draw(entities(request_type(api_key, version)))
    client_id = data.draw(st.none() | st.text(max_size=20))
    correlation_id = data.draw(st.integers(-(2**31), 2**31 - 1))
    header = make_request_header(body, correlation_id=correlation_id, client_id=client_id)
    frame = encode_request(header=header, body=body)
    assert encode_client_request(body, correlation_id=correlation_id, client_id=client_id) == frame
    decoded = decode_request(frame, versions=KAFKA_BROKER_VERSIONS)
    assert (decoded.header, kio_body(decoded.body, type(body))) == (header, body)

    response = data.draw(entities(response_type(api_key, version)))
    encoded = encode_response(correlation_id=correlation_id, body=response)
    assert decode_response(encoded, api_key=api_key, api_version=version) == (
        correlation_id,
        response,
    )


@settings(max_examples=200, deadline=None)
@given(
    flexible=st.booleans(),
    api_key=st.integers(-(2**15), 2**15 - 1),
    api_version=st.integers(-(2**15), 2**15 - 1),
    correlation_id=st.integers(-(2**31), 2**31 - 1),
    client_id=st.none() | st.text(max_size=40),
)
def test_request_headers_are_packed_as_kio_writes_them(
    flexible: bool, api_key: int, api_version: int, correlation_id: int, client_id: str | None
) -> None:
    header_type = RequestHeaderV2 if flexible else RequestHeaderV1
    header = header_type(
        request_api_key=i16(api_key),
        request_api_version=i16(api_version),
        correlation_id=i32(correlation_id),
        client_id=client_id,
    )
    buffer = io.BytesIO()
    entity_writer(header_type)(buffer, header)
    assert encode_request_header(header) == buffer.getvalue()


def test_request_header_v1_and_v2_choice() -> None:
    v0 = make_request_header(ApiVersionsRequestV0(), correlation_id=1, client_id=None)
    v3 = make_request_header(
        ApiVersionsRequestV3(client_software_name="a", client_software_version="1"),
        correlation_id=1,
        client_id="c",
    )
    assert isinstance(v0, RequestHeaderV1)
    assert isinstance(v3, RequestHeaderV2)
    with pytest.raises(ValueError, match="needs request header v2"):
        encode_request(
            header=RequestHeaderV1(
                request_api_key=i16(18),
                request_api_version=i16(3),
                correlation_id=i32(1),
                client_id=None,
            ),
            body=ApiVersionsRequestV3(client_software_name="a", client_software_version="1"),
        )


def _frame(body: Any, *, correlation_id: int = 9, client_id: str | None = "t") -> bytes:
    header = make_request_header(body, correlation_id=correlation_id, client_id=client_id)
    return encode_request(header=header, body=body)


SERVED = {ApiKey.API_VERSIONS: VersionRange(0, 4), ApiKey.METADATA: VersionRange(0, 11)}


def test_client_id_is_a_legacy_string_even_in_header_v2() -> None:
    frame = _frame(
        ApiVersionsRequestV3(client_software_name="n", client_software_version="1"),
        client_id="abc",
    )
    # api key, version, correlation id, then int16 length 3 (legacy), not varint 4 (compact)
    assert frame[8:13] == b"\x00\x03abc"
    assert frame[13] == 0  # header v2's empty tagged fields


def test_unknown_api_key() -> None:
    frame = struct.pack(">hhih", 999, 0, 5, -1)
    with pytest.raises(UnknownApiKeyError, match="unknown API key 999") as caught:
        decode_request(frame, versions=SERVED)
    assert caught.value.correlation_id == 5


def test_api_not_served() -> None:
    frame = _frame(sample(request_type(ApiKey.PRODUCE, 9)))
    with pytest.raises(UnknownApiKeyError, match="Produce \\(key 0\\) is not served"):
        decode_request(frame, versions=SERVED)


def test_unsupported_version_of_a_served_api() -> None:
    frame = _frame(sample(MetadataRequestV12))
    with pytest.raises(UnsupportedVersionError, match="Metadata v12 is not supported") as caught:
        decode_request(frame, versions=SERVED)
    assert caught.value.api_key == ApiKey.METADATA
    assert caught.value.api_version == 12
    assert caught.value.correlation_id == 9


def test_unsupported_api_versions_version_is_decoded_for_an_answer() -> None:
    # a v127 request from some future client: header v2, body unknown and never read
    header = struct.pack(">hhih", 18, 127, 77, 4) + b"next" + b"\x00"
    frame = header + b"\x05whatever\x07future\x00\x00\x00"
    request = decode_request(frame, versions=SERVED)
    assert request.unsupported_version
    assert request.api_key == ApiKey.API_VERSIONS
    assert request.api_version == 127
    assert request.correlation_id == 77
    assert request.client_id == "next"
    assert request.body == ApiVersionsRequestV0()


def test_unsupported_api_versions_version_below_the_range() -> None:
    served = {ApiKey.API_VERSIONS: VersionRange(3, 4)}
    request = decode_request(_frame(ApiVersionsRequestV0()), versions=served)
    assert request.unsupported_version
    assert request.api_version == 0


def test_truncated_body() -> None:
    frame = _frame(ApiVersionsRequestV3(client_software_name="name", client_software_version="1"))
    with pytest.raises(InvalidRequestError, match="cannot decode ApiVersions v3 request body"):
        decode_request(frame[:-3], versions=SERVED)


def test_truncated_header() -> None:
    frame = struct.pack(">hhih", 18, 0, 1, 10) + b"abc"
    with pytest.raises(InvalidRequestError, match="cannot decode request header v1") as caught:
        decode_request(frame, versions=SERVED)
    assert caught.value.correlation_id == 1


@pytest.mark.parametrize("frame", [b"", b"\x00", b"\x00\x12\x00"])
def test_frame_too_short_for_a_header(frame: bytes) -> None:
    with pytest.raises(InvalidRequestError, match="too short for a request header"):
        decode_request(frame, versions=SERVED)


def test_trailing_bytes_after_the_body_are_ignored_as_kafka_does() -> None:
    # librdkafka's all-topics Metadata v9+ request has three stray bytes after its body;
    # Kafka's RequestContext.parseRequest never looks past the body.
    frame = _frame(ApiVersionsRequestV0()) + b"\x00"
    request = decode_request(frame, versions=SERVED)
    assert request.body == ApiVersionsRequestV0()
    assert request.trailing_bytes == 1


_UNKNOWN_TAG = b"\x01\x09\x01\xaa"
"""A tagged-field section with one field kio does not know: count 1, tag 9, size 1, a byte."""


def test_unknown_tagged_field_in_the_body_is_an_invalid_request() -> None:
    # Kafka skips tagged fields it does not know; kio 0.6's reader cannot (it raises KeyError),
    # so the request is one the broker cannot parse: InvalidRequestError, the connection closes.
    frame = _frame(ApiVersionsRequestV3(client_software_name="n", client_software_version="1"))
    assert frame.endswith(b"\x00")  # the body's empty tagged-field section
    tampered = frame[:-1] + _UNKNOWN_TAG
    with pytest.raises(
        InvalidRequestError,
        match=r"cannot decode ApiVersions v3 request body: unknown tagged field 9 \(kio cannot",
    ) as caught:
        decode_request(tampered, versions=SERVED)
    assert caught.value.correlation_id == 9
    assert caught.value.api_key == ApiKey.API_VERSIONS


def test_unknown_tagged_field_in_the_header_is_an_invalid_request() -> None:
    frame = _frame(
        ApiVersionsRequestV3(client_software_name="n", client_software_version="1"),
        client_id="abc",
    )
    # Header v2: key, version, correlation id, client id (int16 length + 3 bytes), tag section.
    tags_at = 2 + 2 + 4 + 2 + 3
    assert frame[tags_at] == 0
    tampered = frame[:tags_at] + _UNKNOWN_TAG + frame[tags_at + 1 :]
    with pytest.raises(
        InvalidRequestError, match="cannot decode request header v2: unknown tagged field 9"
    ):
        decode_request(tampered, versions=SERVED)


def test_response_of_unsupported_api_versions_is_v0_with_header_v0() -> None:
    from kio.schema.api_versions.v0.response import (  # noqa: PLC0415
        ApiVersion,
        ApiVersionsResponse,
    )

    body = ApiVersionsResponse(
        error_code=ErrorCode.unsupported_version,
        api_keys=(ApiVersion(api_key=i16(18), min_version=i16(0), max_version=i16(4)),),
    )
    assert encode_response(correlation_id=77, body=body) == bytes.fromhex(
        "0000004d002300000001001200000004"
    )
