"""The network layer of a running ``strom server``: ApiVersions, pipelining, bad input."""

from __future__ import annotations

import logging
import re
import struct
import threading
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient
from kio.schema.api_versions.v0 import ApiVersionsRequest as ApiVersionsRequestV0
from kio.schema.api_versions.v1 import ApiVersionsRequest as ApiVersionsRequestV1
from kio.schema.api_versions.v2 import ApiVersionsRequest as ApiVersionsRequestV2
from kio.schema.api_versions.v3 import ApiVersionsRequest as ApiVersionsRequestV3
from kio.schema.api_versions.v4 import ApiVersionsRequest as ApiVersionsRequestV4
from kio.schema.errors import ErrorCode
from strom_harness import KafkaWire, StromServer

from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey, VersionRange
from strom.protocol.framing import frame_prefix

API_VERSIONS_REQUESTS: list[Any] = [
    ApiVersionsRequestV0(),
    ApiVersionsRequestV1(),
    ApiVersionsRequestV2(),
    ApiVersionsRequestV3(client_software_name="strom-tests", client_software_version="1.0"),
    ApiVersionsRequestV4(client_software_name="strom-tests", client_software_version="1.0"),
]


def ranges(response: Any) -> dict[int, tuple[int, int]]:
    return {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}


def assert_served_ranges(advertised: dict[int, tuple[int, int]]) -> None:
    """What the broker advertises: ApiVersions and Metadata among them, every range within
    what Kafka 4.0 brokers serve (other APIs come and go as handlers are added)."""
    assert advertised[ApiKey.API_VERSIONS] == (0, 4)
    assert advertised[ApiKey.METADATA] == (0, 13)
    for api_key, (low, high) in advertised.items():
        assert VersionRange(low, high).issubset(KAFKA_BROKER_VERSIONS[ApiKey(api_key)])


def assert_still_serving(server: StromServer) -> None:
    with server.connect() as wire:
        response = wire.request(API_VERSIONS_REQUESTS[3])
        assert response.error_code == ErrorCode.none
        assert ranges(response)[ApiKey.API_VERSIONS] == (0, 4)


@pytest.mark.parametrize("body", API_VERSIONS_REQUESTS, ids=lambda b: f"v{b.__version__}")
def test_api_versions_every_version(strom_server: StromServer, body: Any) -> None:
    with strom_server.connect() as wire:
        response = wire.request(body)
    assert response.__version__ == body.__version__
    assert response.error_code == ErrorCode.none
    assert_served_ranges(ranges(response))


def test_api_versions_v3_response_has_no_header_tagged_fields(strom_server: StromServer) -> None:
    with strom_server.connect() as wire:
        correlation_id = wire.send(API_VERSIONS_REQUESTS[3])
        frame = wire.read_frame()
        served = len(wire.request(API_VERSIONS_REQUESTS[0]).api_keys)
    # header v0 (correlation id only), then error code 0 and a compact array of every API
    assert frame[:4] == struct.pack(">i", correlation_id)
    assert frame[4:6] == b"\x00\x00"
    assert frame[6] == served + 1  # compact array length + 1 (fewer than 127 APIs: one byte)


def test_unsupported_api_versions_version_gets_v0_error_35(strom_server: StromServer) -> None:
    # a request from a future client: ApiVersions v127, header v2, a body nobody can read yet
    header = struct.pack(">hhih", ApiKey.API_VERSIONS, 127, 1234, 6) + b"future" + b"\x00"
    with strom_server.connect() as wire:
        wire.send_frame(header + b"\x07strange\x02\x00body\x00")
        correlation_id, response = wire.read_response(api_key=ApiKey.API_VERSIONS, api_version=0)
        assert correlation_id == 1234
        assert response.error_code == ErrorCode.unsupported_version
        assert ranges(response)[ApiKey.API_VERSIONS] == (0, 4)
        # the client retries at a version both know, on the same connection
        assert wire.request(API_VERSIONS_REQUESTS[4]).error_code == ErrorCode.none
    assert_still_serving(strom_server)


def test_invalid_client_software_name_gets_invalid_request(strom_server: StromServer) -> None:
    body = ApiVersionsRequestV3(client_software_name="bad name!", client_software_version="1")
    with strom_server.connect() as wire:
        response = wire.request(body)
    assert response.error_code == ErrorCode.invalid_request
    assert response.api_keys == ()


def test_pipelined_requests_are_answered_in_order(strom_server: StromServer) -> None:
    bodies = [API_VERSIONS_REQUESTS[i % 5] for i in range(50)]
    with strom_server.connect() as wire:
        encoded = [wire.encode(body) for body in bodies]
        wire.send_raw(b"".join(frame_prefix(len(payload)) + payload for _, payload in encoded))
        for (correlation_id, _), body in zip(encoded, bodies, strict=True):
            answered, response = wire.read_response(
                api_key=ApiKey.API_VERSIONS, api_version=body.__version__
            )
            assert answered == correlation_id
            assert response.error_code == ErrorCode.none


def test_many_connections_at_once(strom_server: StromServer) -> None:
    errors: list[BaseException] = []

    def client() -> None:
        try:
            with strom_server.connect() as wire:
                for body in API_VERSIONS_REQUESTS:
                    assert wire.request(body).error_code == ErrorCode.none
        except BaseException as error:
            errors.append(error)

    wires = [strom_server.connect() for _ in range(100)]  # idle connections stay open too
    threads = [threading.Thread(target=client) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == []
    for wire in wires:
        wire.close()


BadInput = Callable[[KafkaWire], None]


def _garbage(wire: KafkaWire) -> None:
    wire.send_raw(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")


def _oversized(wire: KafkaWire) -> None:
    wire.send_raw(struct.pack(">i", 104857600 + 1) + b"\x00" * 100)


def _negative_size(wire: KafkaWire) -> None:
    wire.send_raw(struct.pack(">i", -1))


def _unknown_api_key(wire: KafkaWire) -> None:
    wire.send_frame(struct.pack(">hhih", 999, 0, 7, -1))


def _api_not_served(wire: KafkaWire) -> None:
    # DescribeDelegationToken v1 with an empty body: Kafka brokers serve it, strom does not (no
    # delegation tokens)
    wire.send_frame(struct.pack(">hhih", ApiKey.DESCRIBE_DELEGATION_TOKEN, 1, 7, -1))


def _undecodable_body(wire: KafkaWire) -> None:
    _, payload = wire.encode(API_VERSIONS_REQUESTS[3])
    wire.send_frame(payload[:-4])  # the software version string is cut short


def _short_frame(wire: KafkaWire) -> None:
    wire.send_frame(b"\x00\x12")


def _truncated_frame(wire: KafkaWire) -> None:
    _, payload = wire.encode(API_VERSIONS_REQUESTS[0])
    wire.send_raw(frame_prefix(len(payload)) + payload[:5])
    wire.sock.shutdown(2 - 1)  # SHUT_WR: the client ends mid-frame


@pytest.mark.parametrize(
    ("send", "logged"),
    [
        (_garbage, r"frame size 1195725856 is larger than socket.request.max.bytes=104857600"),
        (_oversized, r"frame size 104857601 is larger than socket.request.max.bytes"),
        (_negative_size, r"invalid frame size -1 \(negative\)"),
        (_unknown_api_key, r"unknown API key 999 \(correlation id 7\)"),
        (_api_not_served, r"DescribeDelegationToken \(key 41\) is not served by this broker"),
        (_undecodable_body, r"cannot decode ApiVersions v3 request body"),
        (_short_frame, r"a 2-byte frame is too short for a request header"),
        (_truncated_frame, r"ended in the middle of a frame \(9 bytes of it received\)"),
    ],
    ids=lambda value: getattr(value, "__name__", "").lstrip("_") or None,
)
def test_bad_input_closes_that_connection_only(
    strom_server: StromServer, send: BadInput, logged: str
) -> None:
    with strom_server.connect() as bystander, strom_server.connect() as wire:
        client_address = "{}:{}".format(*wire.sock.getsockname()[:2])
        send(wire)
        assert wire.is_closed_by_peer(timeout=5)
        # one line names the client and says what was wrong
        strom_server.wait_for_line(re.escape(client_address) + r"\D.*" + logged, timeout=5)
        # a connection that was open all along, and a new one, are both still served
        assert bystander.request(API_VERSIONS_REQUESTS[0]).error_code == ErrorCode.none
    assert_still_serving(strom_server)


def test_good_requests_before_bad_input_may_be_answered(strom_server: StromServer) -> None:
    with strom_server.connect() as wire:
        assert wire.request(API_VERSIONS_REQUESTS[1]).error_code == ErrorCode.none
        _unknown_api_key(wire)
        assert wire.is_closed_by_peer(timeout=5)
    assert_still_serving(strom_server)


def test_librdkafka_negotiates_api_versions(strom_server: StromServer) -> None:
    lines: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    logger = logging.getLogger("strom.tests.librdkafka")
    logger.setLevel(logging.DEBUG)
    logger.addHandler(Collect())
    config: dict[str, Any] = {
        "bootstrap.servers": strom_server.bootstrap,
        "debug": "broker,protocol,feature",
        "logger": logger,
    }
    admin = AdminClient(config)
    # after negotiating, librdkafka asks for Metadata at the newest version both know
    metadata: Any = admin.list_topics(timeout=5)
    assert metadata.cluster_id == strom_server.cluster_id
    assert [(b.id, b.host, b.port) for b in metadata.brokers.values()] == [
        (1, strom_server.host, strom_server.port)
    ]
    admin.poll(0.5)
    text = "\n".join(lines)
    assert re.search(r"Received ApiVersionResponse \(v[34]", text), text
    assert "ApiKey ApiVersion (18) Versions 0..4" in text, text
    assert "ApiKey Metadata (3) Versions 0..13" in text, text
