"""Byte-level answers of the ApiVersions handler, for every version it serves."""

from __future__ import annotations

import asyncio
import struct
from typing import Any

import pytest
from kio.schema.api_versions.v0 import ApiVersionsRequest as ApiVersionsRequestV0
from kio.schema.api_versions.v3 import ApiVersionsRequest as ApiVersionsRequestV3
from kio.schema.api_versions.v4 import ApiVersionsRequest as ApiVersionsRequestV4

from strom.protocol.api import (
    KAFKA_BROKER_VERSIONS,
    ApiKey,
    VersionRange,
    decode_request,
    encode_request,
    encode_response,
    make_request_header,
    request_type,
)
from strom.server.api.handler_table import HandlerTable, RequestContext
from strom.server.handlers.api_versions import ApiVersionsHandler


class MetadataStub:
    api_key = ApiKey.METADATA
    versions = VersionRange(0, 12)

    async def handle(self, context: RequestContext) -> Any:
        raise NotImplementedError


def answer(body: Any, *, frame: bytes | None = None) -> bytes:
    """The response frame payload the handler gives to ``body`` (or to a raw ``frame``)."""
    registry = HandlerTable()
    registry.register(ApiVersionsHandler(registry))
    registry.register(MetadataStub())
    if frame is None:
        header = make_request_header(body, correlation_id=0x01020304, client_id="c")
        frame = encode_request(header=header, body=body)
    request = decode_request(frame, versions=registry.versions)
    context = RequestContext(request=request, client_address="test:1", connection_id="t")
    handler = registry.get(ApiKey.API_VERSIONS)
    assert handler is not None
    response: Any = asyncio.run(handler.handle(context))
    return encode_response(correlation_id=request.correlation_id, body=response)


CORRELATION = "01020304"
LEGACY_ENTRIES = "0000000200030000000c001200000004"
COMPACT_ENTRIES = "0300030000000c0000120000000400"
EXPECTED = {
    0: CORRELATION + "0000" + LEGACY_ENTRIES,
    1: CORRELATION + "0000" + LEGACY_ENTRIES + "00000000",
    2: CORRELATION + "0000" + LEGACY_ENTRIES + "00000000",
    # flexible body, but the header stays v0: no tagged-field byte after the correlation id
    3: CORRELATION + "0000" + COMPACT_ENTRIES + "00000000" + "00",
    4: CORRELATION + "0000" + COMPACT_ENTRIES + "00000000" + "00",
}


@pytest.mark.parametrize("version", KAFKA_BROKER_VERSIONS[ApiKey.API_VERSIONS])
def test_answer_bytes(version: int) -> None:
    body_type: Any = request_type(ApiKey.API_VERSIONS, version)
    body = (
        body_type(client_software_name="strom", client_software_version="0.1")
        if version >= 3
        else body_type()
    )
    assert answer(body).hex() == EXPECTED[version]


def test_unsupported_version_answer_bytes() -> None:
    frame = struct.pack(">hhih", 18, 9, 0x01020304, -1) + b"\x00" + b"\x01\x02\x03"
    # v0 body with error 35 and every supported range, under a v0 header
    assert answer(None, frame=frame).hex() == CORRELATION + "0023" + LEGACY_ENTRIES


@pytest.mark.parametrize(
    ("name", "version"),
    [("bad name", "1"), ("", "1"), ("ok", "1."), ("-ok", "1"), ("ok", "")],
)
def test_invalid_software_name_or_version(name: str, version: str) -> None:
    body = ApiVersionsRequestV3(client_software_name=name, client_software_version=version)
    # INVALID_REQUEST (42), no API list
    assert answer(body).hex() == CORRELATION + "002a" + "01" + "00000000" + "00"


@pytest.mark.parametrize(
    ("name", "version"),
    [("librdkafka", "2.16.0"), ("a", "1-rc.2"), ("confluent-kafka-python", "x")],
)
def test_valid_software_names(name: str, version: str) -> None:
    body = ApiVersionsRequestV4(client_software_name=name, client_software_version=version)
    assert answer(body)[4:6] == b"\x00\x00"


def test_v0_request_needs_no_software_name() -> None:
    assert answer(ApiVersionsRequestV0())[4:6] == b"\x00\x00"
