"""The releases' API version tables, written as each release's changes from the one before,
expand to the tables each release's brokers advertised (``kafka_releases.json``: the tables as
they were written out whole, release by release)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.protocol.kafka_releases import KAFKA_RELEASES, release_versions

WRITTEN_OUT: dict[str, dict[str, list[int]]] = json.loads(
    (Path(__file__).parent / "kafka_releases.json").read_text()
)


@pytest.mark.parametrize("release", sorted(WRITTEN_OUT))
def test_a_release_expands_to_its_whole_table(release: str) -> None:
    expanded = {
        key.name: [versions.min_version, versions.max_version]
        for key, versions in KAFKA_RELEASES[release].items()
    }
    assert expanded == WRITTEN_OUT[release]


def test_the_releases_in_order_then_kafka_4() -> None:
    assert list(KAFKA_RELEASES) == [*WRITTEN_OUT, "4.0"]
    assert KAFKA_RELEASES["4.0"] is KAFKA_BROKER_VERSIONS


def test_a_patch_release_has_its_minor_release_versions() -> None:
    assert release_versions("3.6.1") is KAFKA_RELEASES["3.6"]
    assert ApiKey.DESCRIBE_TOPIC_PARTITIONS not in release_versions("3.7")
    with pytest.raises(ValueError, match=r"unknown Kafka release '2\.7'"):
        release_versions("2.7")
