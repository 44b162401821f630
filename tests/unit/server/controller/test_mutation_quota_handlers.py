"""The controller mutation quota through a node's handlers (forwarded to its controller in an
Envelope, as from a client): strict from CreateTopics v6, CreatePartitions v3 and DeleteTopics
v5, permissive before, the throttle in every answer once the client's credits are gone."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from admin_harness import AdminNode
from admin_requests import (
    create_partitions_request,
    create_topics_request,
    delete_topics_request,
)
from kio.schema.alter_client_quotas.v1 import request as alter
from kio.static.primitive import f64

from strom.common import ErrorCode

THROTTLED = ErrorCode.throttling_quota_exceeded


@pytest.fixture
def node(tmp_path: Path) -> Iterator[AdminNode]:
    node = AdminNode(tmp_path / "data", {"controller.quota.window.num": "1"})
    entry = alter.EntryData(  # the harness's client id: a burst of 2 partitions
        entity=(alter.EntityData(entity_type="client-id", entity_name="test"),),
        ops=(alter.OpData(key="controller_mutation_rate", value=f64(2.0), remove=False),),
    )
    answer = node.request(alter.AlterClientQuotasRequest(entries=(entry,), validate_only=False))
    assert answer.entries[0].error_code == ErrorCode.none
    yield node
    node.close()


def throttle_ms(answer: Any) -> float:
    return float(answer.throttle_time.total_seconds() * 1000)


def test_strict_and_permissive_versions(node: AdminNode) -> None:
    first = node.request(create_topics_request(7, [("a", 2, -1, {})]))
    assert first.topics[0].error_code == ErrorCode.none and throttle_ms(first) == 0
    second = node.request(create_topics_request(7, [("b", 3, -1, {})]))  # credits left: taken
    assert second.topics[0].error_code == ErrorCode.none and throttle_ms(second) == 0
    # 3 credits below zero, refilled at 2 a second: 1.5 s of throttle from here
    for version, refused in ((3, True), (2, False)):
        grown = node.request(create_partitions_request(version, "a", 3))
        assert (grown.results[0].error_code == THROTTLED) is refused
        assert 0 < throttle_ms(grown) <= 2000
    for version, refused in ((5, True), (4, False)):
        deleted = node.request(delete_topics_request(version, ["b"]))
        assert (deleted.responses[0].error_code == THROTTLED) is refused
        assert 0 < throttle_ms(deleted) <= 3500
    for version, refused in ((6, True), (5, False)):
        created = node.request(create_topics_request(version, [(f"c{version}", 1, -1, {})]))
        assert (created.topics[0].error_code == THROTTLED) is refused
        assert throttle_ms(created) > 0
    topic_a, topic_b = node.image.topic("a"), node.image.topic("b")
    assert topic_a is not None and topic_a.num_partitions == 3
    assert topic_b is None
    assert node.image.topic("c6") is None and node.image.topic("c5") is not None
