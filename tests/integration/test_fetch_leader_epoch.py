"""OffsetForLeaderEpoch (what consumers send to validate a fetch position) on a real server."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from data_clients import create_topic, produce_v3, records_batch, unique_topic
from kio.schema.errors import ErrorCode
from kio.static.primitive import i32
from strom_harness import StromServer

from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey, request_type


def end_offsets(
    server: StromServer, version: int, partitions: list[tuple[str, int, int, int]]
) -> dict[tuple[str, int], tuple[ErrorCode, int, int]]:
    """(topic, partition, current leader epoch, leader epoch) -> (error, epoch, end offset)."""
    request_class: Any = request_type(ApiKey.OFFSET_FOR_LEADER_EPOCH, version)
    schema: Any = sys.modules[request_class.__module__]
    topics: dict[str, list[Any]] = {}
    for name, partition, current, epoch in partitions:
        topics.setdefault(name, []).append(
            schema.OffsetForLeaderPartition(
                partition=i32(partition), current_leader_epoch=i32(current), leader_epoch=i32(epoch)
            )
        )
    fields: dict[str, Any] = {
        "topics": tuple(
            schema.OffsetForLeaderTopic(topic=name, partitions=tuple(parts))
            for name, parts in topics.items()
        )
    }
    if version >= 3:
        fields["replica_id"] = i32(-1)
    with server.connect() as wire:
        response = wire.request(request_class(**fields))
    return {
        (t.topic, p.partition): (p.error_code, p.leader_epoch, p.end_offset)
        for t in response.topics
        for p in t.partitions
    }


@pytest.mark.parametrize("version", list(KAFKA_BROKER_VERSIONS[ApiKey.OFFSET_FOR_LEADER_EPOCH]))
def test_offset_for_leader_epoch(strom_server: StromServer, version: int) -> None:
    topic = create_topic(strom_server.bootstrap, unique_topic(f"epochs-v{version}"), partitions=2)
    with strom_server.connect() as wire:
        wire.request(produce_v3({(topic, 0): records_batch([b"a", b"b", b"c"])}))
    answers = end_offsets(
        strom_server,
        version,
        [(topic, 0, -1, 0), (topic, 1, 0, 0), (topic, 3, -1, 0), ("nope", 0, -1, 0)],
    )
    assert answers[(topic, 0)] == (ErrorCode.none, 0, 3)
    assert answers[(topic, 1)] == (ErrorCode.none, 0, 0)
    assert answers[(topic, 3)][0] == ErrorCode.unknown_topic_or_partition
    assert answers[("nope", 0)][0] == ErrorCode.unknown_topic_or_partition
    later = end_offsets(strom_server, version, [(topic, 0, -1, 4), (topic, 1, 2, 0)])
    assert later[(topic, 0)] == (ErrorCode.none, -1, -1)  # an epoch above the current one
    assert later[(topic, 1)][0] == ErrorCode.unknown_leader_epoch
