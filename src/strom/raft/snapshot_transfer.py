"""FetchSnapshot, both ends: the leader serves a snapshot in chunks, a follower far behind (or
new) downloads it chunk by chunk and installs it once whole."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from strom.raft import messages
from strom.raft.log import OffsetAndEpoch, RaftLog
from strom.raft.messages import METADATA_TOPIC, LeaderAndEpoch

__all__ = ["SnapshotDownload", "serve_snapshot_chunk"]


def serve_snapshot_chunk(
    log: RaftLog, body: Any, leader: LeaderAndEpoch, *, leading: bool, max_bytes: int
) -> ResponsePayload:
    """The leader's answer to one FetchSnapshot request."""
    topic = body.topics[0] if body.topics else None
    if topic is None or topic.name != METADATA_TOPIC or not topic.partitions:
        return messages.snapshot_answer(ErrorCode.unknown_topic_or_partition, leader)
    part = topic.partitions[0]
    if not leading:
        return messages.snapshot_answer(ErrorCode.not_leader_or_follower, leader)
    asked_epoch = int(part.current_leader_epoch)
    if asked_epoch != leader.epoch:
        if asked_epoch < leader.epoch:
            return messages.snapshot_answer(ErrorCode.fenced_leader_epoch, leader)
        return messages.snapshot_answer(ErrorCode.unknown_leader_epoch, leader)
    wanted = OffsetAndEpoch(int(part.snapshot_id.end_offset), int(part.snapshot_id.epoch))
    data = log.read_snapshot(wanted)
    if data is None:
        return messages.snapshot_answer(ErrorCode.snapshot_not_found, leader, wanted)
    position = int(part.position)
    if position < 0 or position > len(data):
        return messages.snapshot_answer(ErrorCode.position_out_of_range, leader, wanted)
    chunk = data[position : position + min(int(body.max_bytes), max_bytes)]
    return messages.snapshot_answer(
        ErrorCode.none, leader, wanted, size=len(data), position=position, chunk=chunk
    )


@dataclass(slots=True)
class SnapshotDownload:
    """A snapshot being fetched; ``data`` holds the chunks received so far, in order."""

    snapshot: OffsetAndEpoch
    data: bytearray = field(default_factory=bytearray)

    def add(self, part: Any) -> bool:
        """Take one answer's chunk (an out-of-order one is ignored); True once complete."""
        if int(part.position) == len(self.data):
            self.data += bytes(part.unaligned_records)
        return len(self.data) >= int(part.size)
