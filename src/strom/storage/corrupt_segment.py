"""A segment corrupt in the middle: the error, and how recovery tells it from a torn tail.

Recovery after a crash cuts a segment at its first invalid batch (Kafka's ``LogSegment.recover``):
what a crash leaves there is a torn tail, a last write that reached the disk in part. When a
valid batch follows the bad one, though, the bytes are not a torn tail but damage in the middle
(a broken disk, a second process writing the same files, a hand edit), and cutting would drop
the valid batches behind it: that is the operator's decision, so the start stops with
:class:`CorruptSegmentError`, one line naming the file, the position and the choices.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Final

from strom.common import ErrorCode, KafkaError
from strom.protocol.batch import LOG_OVERHEAD, scan_batches

__all__ = ["CorruptSegmentError", "valid_batch_follows"]

_LENGTH: Final = struct.Struct(">i")


class CorruptSegmentError(KafkaError):
    """The ``.log`` file at ``path`` holds no valid batch at byte ``position``; ``offset`` is
    the log offset its valid data ends at, when known."""

    def __init__(self, path: Path, position: int, *, offset: int | None, reason: str) -> None:
        at = f"byte {position}" + (f" (log offset {offset})" if offset is not None else "")
        super().__init__(
            ErrorCode.kafka_storage_error,
            f"segment {path} is corrupt at {at}: {reason}. strom cuts only a torn tail by "
            f"itself; to drop everything from there, run 'truncate -s {position} {path}' and "
            f"delete its .index and .timeindex files, or, when other brokers hold replicas, "
            f"delete the directory {path.parent} so that this broker copies the partition from "
            "its leader; then start again",
        )
        self.path = path
        self.position = position
        self.offset = offset


def valid_batch_follows(data: memoryview, position: int, end: int) -> bool:
    """Whether a whole valid batch (CRC checked) starts right after the frame whose length field
    is at ``position``: then the bad batch there is damage in the middle of ``data[:end]``, not
    a torn tail."""
    after = _frame_end(data, position, end)
    if after is None:
        return False
    next_end = _frame_end(data, after, end)
    return next_end is not None and bool(scan_batches(data, after, next_end)[0])


def _frame_end(data: memoryview, position: int, end: int) -> int | None:
    """Where the frame at ``position`` ends by its length field, if that is inside ``end``."""
    if position + LOG_OVERHEAD > end:
        return None
    (length,) = _LENGTH.unpack_from(data, position + 8)
    frame_end = position + LOG_OVERHEAD + length
    return frame_end if length > 0 and frame_end <= end else None
