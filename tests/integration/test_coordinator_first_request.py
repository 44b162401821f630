"""A coordinator request as the very first request to a fresh ``strom server``, with no
FindCoordinator before it: the broker creates the coordinator's internal topic itself, answers
a retriable coordinator error while it does and while the partition loads, and then serves the
request, so a client that retries those errors gets its answer (NOT_COORDINATOR, which would
send a client to FindCoordinator, is not retried here). Before, only FindCoordinator created
``__transaction_state`` and ``__consumer_offsets``, and such a request was answered
NOT_COORDINATOR for as long as nobody sent one."""

from __future__ import annotations

import datetime
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Final

import pytest
from data_clients import coordinator_request, create_topic, unique_topic
from kio.schema.errors import ErrorCode
from kio.schema.init_producer_id.v4.request import InitProducerIdRequest
from kio.schema.join_group.v5.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.schema.offset_commit.v8.request import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from kio.schema.offset_fetch.v7.request import OffsetFetchRequest, OffsetFetchRequestTopic
from kio.schema.types import GroupId, ProducerId, TopicName, TransactionalId
from kio.static.primitive import i16, i32, i32Timedelta, i64
from strom_harness import KafkaWire, StromServer, start_strom_server

pytestmark = pytest.mark.timeout(60)

RETRY_SECONDS: Final = float(os.environ.get("STROM_TEST_COORDINATOR_RETRY_SECONDS", "15"))
"""How long a request is retried while the coordinator says to wait."""

OVERRIDES: Final = {
    "transaction.state.log.num.partitions": "5",
    "offsets.topic.num.partitions": "5",
}


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[StromServer]:
    """A broker of its own: nothing has created an internal topic yet."""
    started = start_strom_server(data_dir=tmp_path / "data", cwd=tmp_path, overrides=OVERRIDES)
    yield started
    started.stop(signal.SIGTERM)


def _retried(wire: KafkaWire, body: Any, error_of: Callable[[Any], int]) -> Any:
    return coordinator_request(wire, body, error_of, seconds=RETRY_SECONDS)


def test_init_producer_id_first_is_served_after_retriable_errors(fresh: StromServer) -> None:
    request = InitProducerIdRequest(
        transactional_id=TransactionalId(unique_topic("first")),
        transaction_timeout=i32Timedelta.parse(datetime.timedelta(seconds=60)),
        producer_id=ProducerId(-1),
        producer_epoch=i16(-1),
    )
    with fresh.connect() as wire:
        response = _retried(wire, request, lambda r: r.error_code)
    assert (response.error_code, response.producer_epoch) == (ErrorCode.none, 0)


def test_join_group_first_is_served_after_retriable_errors(fresh: StromServer) -> None:
    request = JoinGroupRequest(
        group_id=GroupId(unique_topic("first-join")),
        session_timeout=i32Timedelta.parse(datetime.timedelta(seconds=10)),
        rebalance_timeout=i32Timedelta.parse(datetime.timedelta(seconds=10)),
        member_id="",
        group_instance_id=None,
        protocol_type="consumer",
        protocols=(JoinGroupRequestProtocol(name="range", metadata=b""),),
    )
    with fresh.connect() as wire:
        response = _retried(wire, request, lambda r: r.error_code)
    assert response.error_code == ErrorCode.member_id_required  # KIP-394's first answer


def test_offset_commit_and_fetch_first_are_served_after_retriable_errors(
    fresh: StromServer,
) -> None:
    topic = create_topic(fresh.bootstrap, unique_topic("first-commit"))
    group = GroupId(unique_topic("first-group"))
    fetch = OffsetFetchRequest(
        group_id=group,
        topics=(OffsetFetchRequestTopic(name=TopicName(topic), partition_indexes=(i32(0),)),),
        require_stable=False,
    )
    commit = OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=i32(-1),
        member_id="",
        group_instance_id=None,
        topics=(
            OffsetCommitRequestTopic(
                name=TopicName(topic),
                partitions=(
                    OffsetCommitRequestPartition(
                        partition_index=i32(0),
                        committed_offset=i64(7),
                        committed_leader_epoch=i32(-1),
                        committed_metadata="",
                    ),
                ),
            ),
        ),
    )
    with fresh.connect() as wire:
        fetched = _retried(wire, fetch, lambda r: r.error_code)
        assert fetched.error_code == ErrorCode.none
        assert fetched.topics[0].partitions[0].committed_offset == -1
        committed = _retried(wire, commit, lambda r: r.topics[0].partitions[0].error_code)
        assert committed.topics[0].partitions[0].error_code == ErrorCode.none
        assert wire.request(fetch).topics[0].partitions[0].committed_offset == 7
