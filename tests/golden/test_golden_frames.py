"""Requests real clients sent to strom, and strom's answers, decode and re-encode byte for byte."""

from __future__ import annotations

import pytest
from golden_frames import CLIENTS, GoldenFrame, golden_frames
from wire_checks import check_exchanges, check_request, check_response

from strom.protocol.api import ApiKey, api_name

FRAMES = golden_frames()


def test_every_client_has_golden_frames() -> None:
    assert {frame.client for frame in FRAMES} == set(CLIENTS)


@pytest.mark.parametrize("frame", FRAMES, ids=[frame.path.stem for frame in FRAMES])
def test_golden_exchange(frame: GoldenFrame) -> None:
    request = check_request(frame.request)
    assert api_name(request.api_key).lower() == frame.api.replace("-", "")
    assert request.api_version == frame.version
    if frame.response is not None:
        check_response(request, frame.response)


@pytest.mark.parametrize("client", CLIENTS)
def test_golden_commit_metadata_comes_back(client: str) -> None:
    check_exchanges([(frame.request, frame.response) for frame in golden_frames(client)])


def test_what_the_clients_send_first() -> None:
    """Each client opens with ApiVersions at the newest version it knows (as of capture)."""
    versions = {frame.client: frame.version for frame in FRAMES if frame.api == "api-versions"}
    assert versions == {"kafka-python": 4, "confluent-kafka": 3, "aiokafka": 0}
    (librdkafka,) = (f for f in FRAMES if f.client == "confluent-kafka" and f.api == "api-versions")
    assert check_request(librdkafka.request).client_id == "rdkafka"
    assert check_request(librdkafka.request).api_key == ApiKey.API_VERSIONS


def test_changed_commit_metadata_is_caught() -> None:
    """The check that found kafka-python's metadata coming back with a stranger's bytes."""
    frames = golden_frames("kafka-python")
    exchanges = [
        (
            f.request,
            f.response.replace(b"-meta-", b"-mota-")
            if f.api == "offset-fetch" and f.response
            else f.response,
        )
        for f in frames
    ]
    with pytest.raises(AssertionError, match="never committed"):
        check_exchanges(exchanges)
