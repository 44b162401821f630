"""Every way a partition leaves this broker's leadership answers what waits on it at once
(issue 24 part 2, issue 25 part 2): an acks=all produce, a consumer's and a follower's long
poll, through the real metadata path (``MetadataLoader`` -> log publisher -> replica manager).
A topic deleted and made again under the same name in one metadata change (a broker that
catches up on both at once) must not leave the produce waiting on the new partition, whose
offsets have nothing to do with it."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from data_path_harness import batch, run

from strom.common import ErrorCode, TopicPartition
from strom.common.clock import ManualClock
from strom.config import ServerConfig
from strom.metadata import (
    MetadataDelta,
    MetadataImage,
    MetadataRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from strom.metadata.loader import MetadataBatch, MetadataLoader
from strom.server.broker.log_publisher import LogPublisher
from strom.server.configs.log_configs import TopicConfigResolver
from strom.server.replica.fetch_session import PartitionFetch, SessionPartition
from strom.server.replica.replica_manager import (
    READ_LOG_END,
    READ_UNCOMMITTED,
    FetchParams,
    ReadResultInfo,
    ReplicaManager,
)
from strom.storage.log_manager import LogManager

NODE = 1
TP = TopicPartition("orders", 0)
OLD = uuid.UUID(int=1)
NEW = uuid.UUID(int=2)
ANSWERED_WITHIN = 2.0
"""Seconds; everything waits 60 s unless answered."""


class Broker:
    """Broker 1: the metadata loader, its logs and its replica manager, as a node wires them."""

    def __init__(self, tmp_path: Path) -> None:
        clock = ManualClock()
        config = ServerConfig()
        self.loader = MetadataLoader()
        self.log_manager = LogManager(tmp_path, clock)
        self.loader.install_publisher(
            LogPublisher(self.log_manager, TopicConfigResolver(config, node_id=NODE), node_id=NODE)
        )
        self.replica_manager = ReplicaManager(
            node_id=NODE,
            log_manager=self.log_manager,
            metadata=self.loader,
            config=config,
            clock=clock,
        )
        self.loader.install_publisher(self._apply_leadership)
        self._offset = 0

    def _apply_leadership(self, delta: MetadataDelta, image: MetadataImage) -> None:
        self.replica_manager.apply_metadata(delta, image)  # no fetchers here

    def commit(self, *records: MetadataRecord) -> None:
        """Records committed to the metadata log, applied as one change."""
        self.loader.apply_batch(MetadataBatch(self._offset, records))
        self._offset += len(records)


def topic(topic_id: uuid.UUID, *, leader: int = NODE) -> list[MetadataRecord]:
    return [
        TopicRecord("orders", topic_id),
        PartitionRecord(
            partition_id=0,
            topic_id=topic_id,
            replicas=(1, 2, 3),
            isr=(1, 2, 3),
            leader=leader,
            leader_epoch=0,
            partition_epoch=0,
        ),
    ]


def moved(**change: object) -> PartitionChangeRecord:
    return PartitionChangeRecord(partition_id=0, topic_id=OLD, **change)  # type: ignore[arg-type]


LEAVING: dict[str, tuple[list[MetadataRecord], ErrorCode]] = {
    "deleted": ([RemoveTopicRecord(OLD)], ErrorCode.unknown_topic_or_partition),
    "deleted and made again": (
        [RemoveTopicRecord(OLD), *topic(NEW)],
        ErrorCode.unknown_topic_or_partition,
    ),
    "reassigned away": (
        [moved(replicas=(2, 3, 4), isr=(2, 3), leader=2)],
        ErrorCode.not_leader_or_follower,
    ),
    "followed now": ([moved(leader=2)], ErrorCode.not_leader_or_follower),
}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    node = Broker(tmp_path)
    node.commit(*topic(OLD))
    yield node
    node.log_manager.close_without_flush()


def long_poll(broker: Broker, *, replica_id: int) -> asyncio.Future[list[ReadResultInfo]]:
    params = FetchParams(
        replica_id=replica_id,
        max_wait_ms=60_000,
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=READ_LOG_END if replica_id >= 0 else READ_UNCOMMITTED,
    )
    fetch = PartitionFetch(fetch_offset=1, partition_max_bytes=1 << 20, current_leader_epoch=0)
    partitions = [(SessionPartition(TP.topic, TP.partition), fetch)]
    return asyncio.ensure_future(broker.replica_manager.fetch_messages(params, partitions))


@pytest.mark.parametrize("how", LEAVING)
def test_a_leaving_partition_answers_what_waits_on_it(broker: Broker, how: str) -> None:
    records, error = LEAVING[how]
    manager = broker.replica_manager

    async def scenario() -> None:
        produce = asyncio.ensure_future(
            manager.append_records([(TP, batch())], required_acks=-1, timeout_ms=60_000)
        )
        consumer = long_poll(broker, replica_id=-1)
        follower = long_poll(broker, replica_id=2)
        await asyncio.sleep(0)
        assert not (produce.done() or consumer.done() or follower.done())
        broker.commit(*records)
        waiting: list[asyncio.Future[Any]] = [produce, consumer, follower]
        await asyncio.wait(waiting, timeout=ANSWERED_WITHIN)
        assert produce.done() and consumer.done() and follower.done()
        [(_, result)] = produce.result()
        assert result.error == error
        for reads in (consumer.result(), follower.result()):
            assert [read.error for read in reads] != [ErrorCode.none]

    run(scenario)


def test_a_follower_s_long_poll_hears_of_a_new_leader_epoch(broker: Broker) -> None:
    """Leadership moves away and back in one change: the follower's fetch answers
    FENCED_LEADER_EPOCH at once rather than after ``replica.fetch.wait.max.ms``."""
    manager = broker.replica_manager

    async def scenario() -> None:
        manager.append_to_local_log([(TP, batch())], required_acks=1)
        follower = long_poll(broker, replica_id=2)
        await asyncio.sleep(0)
        assert not follower.done()
        broker.commit(moved(leader=2), moved(leader=NODE))
        await asyncio.wait([follower], timeout=ANSWERED_WITHIN)
        assert follower.done()
        [read] = follower.result()
        assert read.error == ErrorCode.fenced_leader_epoch

    run(scenario)
