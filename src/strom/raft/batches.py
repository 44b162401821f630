"""The metadata log's batches, as Kafka's KRaft writes them: v2 record batches whose partition
leader epoch is the quorum epoch that wrote them.

* data batches: one record per metadata record, null key, the record's bytes as value;
* control batches of one record: key ``(version 0, type)``, value the control message in its
  flexible encoding: LeaderChangeMessage (type 2, first in every leader's epoch),
  SnapshotHeader (3) and SnapshotFooter (4) around a snapshot's data, KRaftVersion (5) and
  Voters (6) where the voters live in the log (KIP-853, see ``voters.py``).
"""

from __future__ import annotations

import enum
import io
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kio.schema.leader_change_message.v0.data import LeaderChangeMessage, Voter
from kio.schema.snapshot_footer_record.v0.data import SnapshotFooterRecord
from kio.schema.snapshot_header_record.v0.data import SnapshotHeaderRecord
from kio.schema.types import BrokerId
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i16, i32, i64

from strom.protocol.batch import HEADER_SIZE, BatchHeader
from strom.protocol.records import Record, build_batch, iter_records

__all__ = [
    "ControlType",
    "RaftBatch",
    "control_batch",
    "data_batch",
    "iter_batches",
    "leader_change",
    "read_leader_change",
]

_CONTROL_KEY: Final = struct.Struct(">hh")


class ControlType(enum.IntEnum):
    """Kafka's ``ControlRecordType`` values a metadata log holds."""

    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


@dataclass(frozen=True, slots=True)
class RaftBatch:
    """One batch of the metadata log (or of a snapshot), decoded."""

    base_offset: int
    last_offset: int
    epoch: int
    timestamp: int
    control: int | None
    """The control record's type (a ``ControlType``, or one strom does not know); None for a
    data batch."""
    records: tuple[bytes, ...]
    """The values: metadata records, or the one control message."""
    size: int

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1


def data_batch(records: Sequence[bytes], *, base_offset: int, epoch: int, timestamp: int) -> bytes:
    return build_batch(
        [
            Record(offset=base_offset + i, timestamp=timestamp, key=None, value=value)
            for i, value in enumerate(records)
        ],
        partition_leader_epoch=epoch,
    )


ControlMessage = LeaderChangeMessage | SnapshotHeaderRecord | SnapshotFooterRecord


def control_batch(
    kind: ControlType,
    message: ControlMessage | bytes,
    *,
    base_offset: int,
    epoch: int,
    timestamp: int,
) -> bytes:
    """A batch of one control record: ``message`` as a kio entity, or already encoded."""
    if isinstance(message, bytes):
        value = message
    else:
        buffer = io.BytesIO()
        write: Any = entity_writer(type(message))
        write(buffer, message)
        value = buffer.getvalue()
    record = Record(
        offset=base_offset, timestamp=timestamp, key=_CONTROL_KEY.pack(0, kind), value=value
    )
    return build_batch([record], is_control=True, partition_leader_epoch=epoch)


def leader_change(
    leader_id: int, voters: Sequence[int], granting: Sequence[int]
) -> LeaderChangeMessage:
    return LeaderChangeMessage(
        version=i16(0),
        leader_id=BrokerId(leader_id),
        voters=tuple(Voter(voter_id=i32(v)) for v in sorted(voters)),
        granting_voters=tuple(Voter(voter_id=i32(v)) for v in sorted(granting)),
    )


def read_leader_change(value: bytes) -> LeaderChangeMessage:
    message, _ = entity_reader(LeaderChangeMessage)(value, 0)
    result: LeaderChangeMessage = message
    return result


def snapshot_header(timestamp: int) -> SnapshotHeaderRecord:
    return SnapshotHeaderRecord(version=i16(0), last_contained_log_timestamp=i64(timestamp))


def snapshot_footer() -> SnapshotFooterRecord:
    return SnapshotFooterRecord(version=i16(0))


def iter_batches(data: bytes | memoryview) -> Iterator[RaftBatch]:
    """The whole batches in ``data`` (a partial one at the end is left out)."""
    view = memoryview(data)
    position = 0
    while position + HEADER_SIZE <= len(view):
        header = BatchHeader.read(view, position)
        end = position + header.size
        if end > len(view):
            return
        chunk = view[position:end]
        values = tuple(
            bytes(record.value) if record.value is not None else b""
            for record in iter_records(chunk)
        )
        control: int | None = None
        if header.is_control:
            key = next(iter_records(chunk)).key or b""
            control = _CONTROL_KEY.unpack_from(key)[1] if len(key) >= _CONTROL_KEY.size else -1
        yield RaftBatch(
            base_offset=header.base_offset,
            last_offset=header.last_offset,
            epoch=header.partition_leader_epoch,
            timestamp=header.max_timestamp,
            control=control,
            records=values,
            size=header.size,
        )
        position = end
