"""Requests captured from real clients decode with kio and re-encode byte for byte."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from strom.protocol.api import (
    KAFKA_BROKER_VERSIONS,
    ApiKey,
    api_name,
    decode_request,
    encode_request,
)

FRAMES = sorted((Path(__file__).parent / "frames").glob("*.hex"))
CLIENTS = ("confluent-kafka", "kafka-python", "aiokafka")
NAME = re.compile("(?P<client>" + "|".join(CLIENTS) + r")-(?P<api>[a-z-]+)-v(?P<version>\d+)\.hex")


def test_every_client_has_a_golden_frame() -> None:
    clients = {NAME.fullmatch(path.name).group("client") for path in FRAMES}  # type: ignore[union-attr]
    assert clients == set(CLIENTS)


@pytest.mark.parametrize("path", FRAMES, ids=[path.stem for path in FRAMES])
def test_golden_frame_round_trip(path: Path) -> None:
    match = NAME.fullmatch(path.name)
    assert match is not None, path.name
    frame = bytes.fromhex(path.read_text(encoding="ascii").strip())
    request = decode_request(frame, versions=KAFKA_BROKER_VERSIONS)
    assert api_name(request.api_key).lower() == match["api"].replace("-", "")
    assert request.api_version == int(match["version"])
    assert not request.unsupported_version
    assert encode_request(header=request.header, body=request.body) == frame


def test_what_the_clients_send_first() -> None:
    """Each client opens with ApiVersions at the newest version it knows (as of capture)."""
    first = {
        NAME.fullmatch(path.name)["client"]: (  # type: ignore[index]
            decode_request(bytes.fromhex(path.read_text().strip()), versions=KAFKA_BROKER_VERSIONS)
        )
        for path in FRAMES
    }
    assert all(request.api_key == ApiKey.API_VERSIONS for request in first.values())
    assert first["kafka-python"].api_version == 4
    assert first["confluent-kafka"].api_version == 3
    assert first["aiokafka"].api_version == 0
    assert first["confluent-kafka"].client_id == "rdkafka"
