"""The replica fetchers over a real replica manager and a leader that never answers: moving a
partition away from a hung leader waits for nothing, and its idle fetcher is cancelled with
the fetch it had in flight (issue 25: a hung fetch to one broker stalled the cluster)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, cast

from data_path_harness import MutableMetadata, image_of, run

from strom.client.async_client import NodeClients
from strom.common import TopicPartition
from strom.common.clock import ManualClock
from strom.config import ServerConfig
from strom.metadata import MetadataImage
from strom.metadata.image import PartitionRegistration
from strom.server.replica.replica_fetcher import FetcherSettings, ReplicaFetcherManager
from strom.server.replica.replica_manager import FollowTarget, LeadershipChanges, ReplicaManager
from strom.storage.log_manager import LogManager

TP = TopicPartition("orders", 0)


class HungLeaders:
    """``NodeClients`` whose every request stays unanswered (a paused or cut-off leader)."""

    def __init__(self) -> None:
        self.in_flight: dict[int, asyncio.Event] = {}
        self.cancelled: list[int] = []

    async def request(self, node_id: int, body: Any, *, timeout: float | None = None) -> Any:
        self.in_flight.setdefault(node_id, asyncio.Event()).set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled.append(node_id)
            raise

    async def close(self) -> None:
        pass


def test_a_partition_moved_off_a_hung_leader_leaves_its_fetch_behind(tmp_path: Path) -> None:
    clock = ManualClock()
    log_manager = LogManager(tmp_path, clock)
    log_manager.get_or_create(TP)
    registration = PartitionRegistration(
        replicas=(1, 2, 3), isr=(1, 2, 3), leader=3, leader_epoch=0, partition_epoch=0
    )
    metadata = MutableMetadata(image_of({"orders": {0: registration}}))
    manager = ReplicaManager(
        node_id=1,
        log_manager=log_manager,
        metadata=metadata,
        config=ServerConfig({}),
        clock=clock,
    )
    leaders = HungLeaders()
    fetchers = ReplicaFetcherManager(
        node_id=1,
        broker_epoch=lambda: 1,
        replica_manager=manager,
        clients=cast(NodeClients, leaders),
        settings=FetcherSettings(socket_timeout_ms=3_600_000),
        clock=clock,
    )

    async def scenario() -> None:
        fetchers.apply(LeadershipChanges(follow={TP: FollowTarget(3, 0)}))
        await asyncio.wait_for(leaders.in_flight.setdefault(3, asyncio.Event()).wait(), 5)
        # Broker 3 is fenced: 2 leads now. Applying that waits for nothing...
        metadata.image = image_of(
            {
                "orders": {
                    0: PartitionRegistration(
                        replicas=(1, 2, 3), isr=(1, 2), leader=2, leader_epoch=1, partition_epoch=1
                    )
                }
            }
        )
        fetchers.apply(LeadershipChanges(follow={TP: FollowTarget(2, 1)}))
        assert fetchers.targets == {TP: FollowTarget(2, 1)}
        # ...the fetch to the new leader goes out, and the one to the hung leader is cancelled.
        await asyncio.wait_for(leaders.in_flight.setdefault(2, asyncio.Event()).wait(), 5)
        assert leaders.cancelled == [3]
        await fetchers.stop()
        assert sorted(leaders.cancelled) == [2, 3]

    try:
        run(scenario)
    finally:
        log_manager.close_without_flush()
        metadata.image = MetadataImage.empty()
