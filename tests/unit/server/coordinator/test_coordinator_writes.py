"""A coordinator runtime's writes: appended at once to its internal topic, answered once the
high watermark passes them, through the replica manager's acks=all wait (its produce
purgatory), with the write timeout and leadership loss as a producer's acks=all has them."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest
from data_path_harness import NODE_ID, DataPath, image_of, registration, run

from strom.common import ErrorCode, TopicPartition
from strom.protocol.batch import BatchHeader
from strom.server.channel.auto_topics import AutoTopicCreator
from strom.server.coordinator.coordinator_runtime import CoordinatorCore, CoordinatorRuntime
from strom.server.replica.fetch_session import PartitionFetch, SessionPartition
from strom.server.replica.replica_manager import READ_LOG_END, FetchParams

TOPIC = "__consumer_offsets"
TP = TopicPartition(TOPIC, 0)
FOLLOWER = 2


class Written:
    """A record of the internal topic, as a core hands it to its writer."""

    def encode(self) -> tuple[bytes, bytes]:
        return b"key", b"value"


class Shell(CoordinatorRuntime[CoordinatorCore, Written]):
    """The runtime with no core: only its writing is under test (the partition's errors are
    heard as they are)."""

    @staticmethod
    def _decode(key: bytes, value: bytes | None) -> Written:
        raise NotImplementedError

    def _replay(self, header: BatchHeader, record: Written) -> None:
        raise NotImplementedError

    def _replay_control(self, partition: int, header: BatchHeader, batch: bytes) -> None:
        raise NotImplementedError

    def _finish_loading(self, partition: int, leader_epoch: int) -> None:
        pass

    @staticmethod
    def _append_error(code: ErrorCode) -> ErrorCode:
        return code

    def write(self, heard: list[ErrorCode]) -> None:
        self.append(0, [Written()], heard.append)


@pytest.fixture
def data(tmp_path: Path) -> Iterator[DataPath]:
    path = DataPath(tmp_path)
    path.create({TOPIC: {0: registration(isr=(NODE_ID, FOLLOWER))}})
    yield path
    path.close()


def shell(data: DataPath, *, timeout_ms: int = 5000) -> Shell:
    return Shell(
        topic=TOPIC,
        replica_manager=data.replica_manager,
        auto_topics=cast(AutoTopicCreator, None),
        clock=data.clock,
        write_timeout_ms=timeout_ms,
    )


def test_a_write_is_answered_once_the_follower_has_it(data: DataPath) -> None:
    manager = data.replica_manager

    async def scenario() -> None:
        heard: list[ErrorCode] = []
        shell(data).write(heard)
        assert manager.partition(TP).log_end_offset == 1  # appended at once
        assert heard == [] and len(manager.produce_purgatory) == 1
        manager.record_follower_fetch(TP, replica_id=FOLLOWER, log_end_offset=1)
        assert heard == []  # on the loop's next turn
        await asyncio.sleep(0)
        assert heard == [ErrorCode.none]

    run(scenario)


def test_a_write_made_on_hearing_an_acknowledgement_wakes_the_follower(data: DataPath) -> None:
    """The follower's fetch that acknowledges a write is the one that must carry the write a
    core makes on hearing it (a transaction's Complete record after its markers): heard inside
    that fetch's read, the second write would land before the fetch parks, wake nobody, and
    wait out the follower's ``max_wait`` (30 s here)."""
    manager = data.replica_manager

    async def scenario() -> None:
        runtime = shell(data)
        heard: list[ErrorCode] = []

        def write_again(code: ErrorCode) -> None:
            heard.append(code)
            runtime.append(0, [Written()], heard.append)

        runtime.append(0, [Written()], write_again)
        params = FetchParams(replica_id=FOLLOWER, max_wait_ms=30_000, isolation_level=READ_LOG_END)
        fetch = PartitionFetch(fetch_offset=1, partition_max_bytes=1 << 20)
        reads = await asyncio.wait_for(
            manager.fetch_messages(params, [(SessionPartition(TOPIC, 0), fetch)]), 10
        )
        assert reads[0].size > 0  # the second write
        for read in reads:
            read.close()
        assert heard == [ErrorCode.none]
        manager.record_follower_fetch(TP, replica_id=FOLLOWER, log_end_offset=2)
        await asyncio.sleep(0)
        assert heard == [ErrorCode.none, ErrorCode.none]

    run(scenario)


def test_a_write_answered_at_once_without_followers(tmp_path: Path) -> None:
    data = DataPath(tmp_path)
    data.create({TOPIC: 1})
    heard: list[ErrorCode] = []
    shell(data).write(heard)  # no event loop needed: decided before anything waits
    assert heard == [ErrorCode.none]
    data.close()


def test_a_write_times_out(data: DataPath) -> None:
    async def scenario() -> None:
        heard: list[ErrorCode] = []
        shell(data, timeout_ms=20).write(heard)
        await asyncio.sleep(0.1)
        assert heard == [ErrorCode.request_timed_out]

    run(scenario)


def test_a_write_fails_when_leadership_moves(data: DataPath) -> None:
    manager = data.replica_manager

    async def scenario() -> None:
        heard: list[ErrorCode] = []
        shell(data).write(heard)
        data.metadata.image = image_of({TOPIC: {0: registration(leader=FOLLOWER)}})
        manager.produce_purgatory.check_and_complete(TP)  # as the leadership listener does
        await asyncio.sleep(0)
        assert heard == [ErrorCode.not_leader_or_follower]

    run(scenario)


def test_committed_waits_for_an_earlier_write(data: DataPath) -> None:
    manager = data.replica_manager

    async def scenario() -> None:
        runtime = shell(data)
        runtime.write([])
        waiting = asyncio.ensure_future(runtime._committed(TP, 1))
        await asyncio.sleep(0)
        assert not waiting.done()
        manager.record_follower_fetch(TP, replica_id=FOLLOWER, log_end_offset=1)
        assert await waiting == ErrorCode.none

    run(scenario)
