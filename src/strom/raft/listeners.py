"""Handing what the quorum committed to the state machines above it (Kafka's listener contexts).

Each registered listener reads at its own pace: a snapshot first when it starts behind the log's
start, then every committed batch below the high watermark, in order, exactly once; and a leader
change once it has read everything the change depends on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from strom.raft.log import RaftLog
from strom.raft.messages import LeaderAndEpoch
from strom.raft.snapshots import SnapshotReader

__all__ = ["CommittedBatch", "ListenerContext", "RaftListener"]


@dataclass(frozen=True, slots=True)
class CommittedBatch:
    """A committed batch for the state machine; control batches come with no records."""

    base_offset: int
    last_offset: int
    epoch: int
    append_timestamp: int
    records: tuple[bytes, ...]
    is_control: bool = False


class RaftListener(Protocol):
    def handle_commit(self, batch: CommittedBatch) -> None: ...

    def handle_load_snapshot(self, snapshot: SnapshotReader) -> None: ...

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None: ...


@dataclass(slots=True)
class ListenerContext:
    listener: RaftListener
    next_offset: int = 0
    notified: LeaderAndEpoch | None = None

    def catch_up(self, log: RaftLog, high_watermark: int | None) -> None:
        """Deliver the latest snapshot if this listener is behind it, then committed batches."""
        snapshot = log.latest_snapshot()
        if (
            snapshot is not None
            and self.next_offset < snapshot.offset
            and (self.next_offset == 0 or self.next_offset < log.start_offset)
        ):
            data = log.read_snapshot(snapshot)
            if data is not None:
                self.listener.handle_load_snapshot(SnapshotReader(snapshot, data))
                self.next_offset = snapshot.offset
        if high_watermark is None:
            return
        bound = min(high_watermark, log.end_offset)
        for batch in log.batches(self.next_offset, bound):
            if batch.last_offset >= bound:
                break
            self.listener.handle_commit(
                CommittedBatch(
                    base_offset=batch.base_offset,
                    last_offset=batch.last_offset,
                    epoch=batch.epoch,
                    append_timestamp=batch.timestamp,
                    records=() if batch.control is not None else batch.records,
                    is_control=batch.control is not None,
                )
            )
            self.next_offset = batch.next_offset

    def notify(self, current: LeaderAndEpoch, epoch_start_offset: int | None) -> None:
        """Tell of a leader change; a leader's own state machine hears of its election only once
        it has read everything before the epoch's start."""
        if self.notified == current:
            return
        if epoch_start_offset is not None and self.next_offset < epoch_start_offset:
            return
        self.notified = current
        self.listener.handle_leader_change(current)
