"""The quorum's writes off the event loop (``strom.server.raft.raft_disk``): with an fsync that
blocks until the test lets it go, the loop keeps running, a vote is not answered before it is on
disk, and the log is not trimmed before its snapshot is."""

from __future__ import annotations

import asyncio
import json
import os
import random
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kio.schema.errors import ErrorCode

from strom.client.async_client import NodeClients
from strom.common.clock import ManualClock
from strom.metadata import MetadataLoader
from strom.raft import (
    ElectionState,
    InboundRequest,
    InMemoryRaftLog,
    OffsetAndEpoch,
    RaftClient,
    RaftConfig,
    SnapshotWriter,
    messages,
)
from strom.raft.batches import data_batch
from strom.server.raft.raft_disk import BackgroundQuorumStateStore, DiskWriter
from strom.server.raft.raft_log import METADATA_PARTITION, FileRaftLog
from strom.server.raft.raft_manager import RaftManager, SnapshotPolicy
from strom.storage.log_config import LogConfig
from strom.storage.partition_log import PartitionLog

pytestmark = pytest.mark.timeout(30)

CLUSTER = "test-cluster"


class SlowFsync:
    """``os.fsync`` that, once armed, blocks worker threads until released."""

    def __init__(self) -> None:
        self.armed = False
        self.release = threading.Event()
        self.blocked = threading.Event()
        self._real = os.fsync

    def __call__(self, fd: int) -> None:
        if self.armed and threading.current_thread() is not threading.main_thread():
            self.blocked.set()
            self.release.wait(20)
        self._real(fd)


@pytest.fixture
def slow_fsync(monkeypatch: pytest.MonkeyPatch) -> Iterator[SlowFsync]:
    slow = SlowFsync()
    monkeypatch.setattr(os, "fsync", slow)
    yield slow
    slow.release.set()


async def _ticks_while(condition: Callable[[], bool], *, at_least: int = 20) -> int:
    """Loop turns taken while ``condition`` holds (at least ``at_least``, then until false)."""
    ticks = 0
    while ticks < at_least or condition():
        await asyncio.sleep(0.001)
        ticks += 1
        assert ticks < 20_000, "the condition never changed"
    return ticks


def test_a_vote_is_answered_only_once_the_quorum_state_is_on_disk(
    tmp_path: Path, slow_fsync: SlowFsync
) -> None:
    path = tmp_path / "quorum-state"

    async def scenario() -> None:
        writer = DiskWriter("test-quorum-state")
        store = BackgroundQuorumStateStore(path, writer)

        def make_client(channel: RaftManager) -> RaftClient:
            return RaftClient(
                node_id=1,
                voters=(1, 2, 3),
                cluster_id=CLUSTER,
                log=InMemoryRaftLog(),
                state_store=store,
                channel=channel,
                clock=ManualClock(now_ms=0),
                random=random.Random(7),
                config=RaftConfig(election_timeout_ms=10_000, fetch_timeout_ms=20_000),
            )

        manager = RaftManager(
            node_id=1,
            make_client=make_client,
            clients=NodeClients(lambda node: None),
            loader=MetadataLoader(),
            clock=ManualClock(now_ms=0),
            snapshots=SnapshotPolicy(max_bytes_between=1 << 30, max_interval_ms=0),
            state_writer=writer,
            writers=(writer,),
        )
        await _ticks_while(lambda: writer.pending > 0, at_least=0)  # the initial state
        slow_fsync.armed = True
        answer: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        vote = messages.vote(CLUSTER, candidate=2, epoch=5, last=OffsetAndEpoch(0, 0))
        manager.client.handle_request(InboundRequest(ref=answer, source=None, body=vote))

        assert store.read() == ElectionState(5, voted_id=2)  # decided at once ...
        await _ticks_while(lambda: not slow_fsync.blocked.is_set())
        await _ticks_while(lambda: False)  # ... the loop turns while the fsync hangs ...
        assert not answer.done()  # ... and the grant waits for the disk
        assert json.loads(path.read_text())["leaderEpoch"] == 0

        slow_fsync.release.set()
        body = await asyncio.wait_for(answer, 10)
        [topic] = body.topics  # type: ignore[attr-defined]
        [partition] = topic.partitions
        assert (partition.error_code, partition.vote_granted) == (ErrorCode.none, True)
        stored = json.loads(path.read_text())
        assert (stored["leaderEpoch"], stored["votedId"]) == (5, 2)
        await manager.stop()

    asyncio.run(scenario())


def test_the_log_is_trimmed_only_once_its_snapshot_is_on_disk(
    tmp_path: Path, slow_fsync: SlowFsync
) -> None:
    async def scenario() -> None:
        writer = DiskWriter("test-snapshots")
        clock = ManualClock()
        partition = PartitionLog.open(
            tmp_path / METADATA_PARTITION.dir_name,
            config=LogConfig(retention_ms=-1, retention_bytes=-1, segment_bytes=300),
            clock=clock,
        )
        log = FileRaftLog(partition, clock=clock, snapshot_writer=writer)
        for epoch in range(1, 9):
            log.append(
                data_batch([b"x" * 40], base_offset=log.end_offset, epoch=epoch, timestamp=0)
            )
        log.flush()
        snapshot = OffsetAndEpoch(6, 6)
        frozen: list[bytes] = []
        snapshot_writer = SnapshotWriter(
            snapshot, timestamp=0, on_frozen=lambda _, data: frozen.append(data)
        )
        snapshot_writer.freeze()
        slow_fsync.armed = True

        log.store_snapshot(snapshot, frozen[0])  # as the Raft core does after freeze ...
        log.delete_before_snapshot(snapshot)
        assert log.latest_snapshot() == snapshot
        assert log.read_snapshot(snapshot) == frozen[0]  # served from memory meanwhile
        await _ticks_while(lambda: not slow_fsync.blocked.is_set())
        await _ticks_while(lambda: False)
        assert log.start_offset == 0  # ... but nothing is trimmed before the file is durable
        assert not list(log.directory.glob("*.checkpoint"))

        slow_fsync.release.set()
        await _ticks_while(lambda: writer.pending > 0, at_least=0)
        assert log.start_offset == 6
        assert [p.name for p in log.directory.glob("*.checkpoint")] == [
            "00000000000000000006-0000000006.checkpoint"
        ]
        await writer.close()
        partition.close()

    asyncio.run(scenario())


def test_a_failed_write_holds_everything_after_it(tmp_path: Path) -> None:
    async def scenario() -> None:
        writer = DiskWriter("test-failing")
        released: list[str] = []

        def fail() -> None:
            raise OSError("disk gone")

        writer.submit(fail)
        writer.when_written(lambda: released.append("answer"))
        await _ticks_while(lambda: writer.pending > 0, at_least=0)
        writer.when_written(lambda: released.append("later"))
        assert released == []
        assert isinstance(writer.failed, OSError)
        await writer.close()

    asyncio.run(scenario())
