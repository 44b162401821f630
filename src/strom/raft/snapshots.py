"""Snapshots of the replicated state, in Kafka's format: v2 batches, a SnapshotHeader control
record first, the state's records in data batches, a SnapshotFooter last; named by
``(end_offset, epoch)``: the state after every record below ``end_offset``, whose last record
was written in ``epoch``. Where the voters live in the log (KIP-853), a KRaftVersion and a Voters
control record follow the header: the voter set in effect at the end offset. A file on disk
is ``<20-digit offset>-<10-digit epoch>.checkpoint``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from strom.raft.batches import (
    ControlType,
    control_batch,
    data_batch,
    iter_batches,
    snapshot_footer,
    snapshot_header,
)
from strom.raft.log import OffsetAndEpoch
from strom.raft.voters import VoterSet, kraft_version_record, read_voters_record

__all__ = [
    "SnapshotReader",
    "SnapshotWriter",
    "parse_snapshot_file_name",
    "snapshot_file_name",
]

RECORDS_PER_BATCH = 1000
SUFFIX = ".checkpoint"


def snapshot_file_name(snapshot: OffsetAndEpoch) -> str:
    return f"{snapshot.offset:020d}-{snapshot.epoch:010d}{SUFFIX}"


def parse_snapshot_file_name(name: str) -> OffsetAndEpoch | None:
    if not name.endswith(SUFFIX):
        return None
    offset, sep, epoch = name.removesuffix(SUFFIX).partition("-")
    if not sep or not offset.isdigit() or not epoch.isdigit():
        return None
    return OffsetAndEpoch(int(offset), int(epoch))


class SnapshotWriter:
    """Gathers a snapshot's records; :meth:`freeze` makes it whole and hands it on."""

    def __init__(
        self,
        snapshot: OffsetAndEpoch,
        *,
        timestamp: int,
        on_frozen: Callable[[OffsetAndEpoch, bytes], None],
        voters: VoterSet | None = None,
    ) -> None:
        """``voters``: the voter set to carry (None with static voters, ``kraft.version`` 0)."""
        self.snapshot = snapshot
        self._voters = voters
        self._timestamp = timestamp
        self._on_frozen = on_frozen
        self._records: list[bytes] = []
        self._frozen = False

    def append(self, records: Sequence[bytes]) -> None:
        if self._frozen:
            raise RuntimeError("the snapshot is frozen")
        self._records.extend(records)

    def freeze(self) -> None:
        if self._frozen:
            return
        self._frozen = True
        epoch = self.snapshot.epoch
        parts = [
            control_batch(
                ControlType.SNAPSHOT_HEADER,
                snapshot_header(self._timestamp),
                base_offset=0,
                epoch=epoch,
                timestamp=self._timestamp,
            )
        ]
        offset = 1
        if self._voters is not None:
            for kind, value in (
                (ControlType.KRAFT_VERSION, kraft_version_record(1)),
                (ControlType.KRAFT_VOTERS, self._voters.encode()),
            ):
                parts.append(
                    control_batch(
                        kind, value, base_offset=offset, epoch=epoch, timestamp=self._timestamp
                    )
                )
                offset += 1
        for start in range(0, len(self._records), RECORDS_PER_BATCH):
            chunk = self._records[start : start + RECORDS_PER_BATCH]
            parts.append(
                data_batch(chunk, base_offset=offset, epoch=epoch, timestamp=self._timestamp)
            )
            offset += len(chunk)
        parts.append(
            control_batch(
                ControlType.SNAPSHOT_FOOTER,
                snapshot_footer(),
                base_offset=offset,
                epoch=epoch,
                timestamp=self._timestamp,
            )
        )
        self._on_frozen(self.snapshot, b"".join(parts))


class SnapshotReader:
    """A stored snapshot: its id and its records."""

    def __init__(self, snapshot: OffsetAndEpoch, data: bytes) -> None:
        batches = list(iter_batches(data))
        if (
            not batches
            or batches[0].control != ControlType.SNAPSHOT_HEADER
            or batches[-1].control != ControlType.SNAPSHOT_FOOTER
        ):
            raise ValueError(f"snapshot {snapshot_file_name(snapshot)} is incomplete or corrupt")
        self.snapshot = snapshot
        self._batches = batches

    @property
    def offset(self) -> int:
        """The end offset: the snapshot holds the state of every record below it."""
        return self.snapshot.offset

    @property
    def epoch(self) -> int:
        return self.snapshot.epoch

    @property
    def voters(self) -> VoterSet | None:
        """The voter set the snapshot carries (None: a static quorum's)."""
        for batch in self._batches:
            if batch.control == ControlType.KRAFT_VOTERS:
                return read_voters_record(batch.records[0])
        return None

    def records(self) -> Iterator[bytes]:
        for batch in self._batches:
            if batch.control is None:
                yield from batch.records
