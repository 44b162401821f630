"""The ``.txnindex`` entries batches make: :class:`AbortedTxns` follows producers' ongoing
transactions through batches as they are appended (leader, follower and coordinator appends
alike, as Kafka's ``UnifiedLog.append`` updates the index from the producer state's completed
transactions), and :func:`rebuild_txn_indexes` refills the index of recovered segments (Kafka's
``LogSegment.recover`` with a producer state manager).

An entry needs the aborted transaction's first offset, which may lie in an earlier segment: the
producers' ongoing transactions at the first recovered segment come from the latest producer
snapshot at or below it plus the batches after it (``producer_state.rebuild``); from there the
segments are walked in order (batch headers, and the one record of each control batch),
tracking each producer's ongoing transaction, and every ABORT marker in a recovered segment
appends ``(producer id, first offset, marker offset, last stable offset)``, the last stable
offset being the first offset of the oldest transaction still ongoing after the marker, or the
marker's offset + 1. That is what the live append writes
(:class:`AbortedTxns`, used by both), so a rebuilt index equals the lost one. A marker with no
ongoing transaction of its producer writes nothing (it aborted nothing here), in both paths.
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from strom.protocol.batch import BatchHeader
from strom.protocol.records import ControlRecordType, iter_records, read_control_record
from strom.storage.producer_snapshot import load_latest_snapshot
from strom.storage.producer_state import rebuild
from strom.storage.segment import LogSegment
from strom.storage.txn_index import AbortedTxn

__all__ = ["AbortedTxns", "marker_type", "rebuild_txn_indexes"]


def marker_type(batch: bytes | bytearray | memoryview) -> ControlRecordType:
    """The type of the transaction marker in a whole control batch."""
    record = next(iter_records(batch), None)
    if record is None:  # emptied control batch: nothing to decide (never written by strom)
        return ControlRecordType.COMMIT
    return read_control_record(record)[0]


class AbortedTxns:
    """Producers' ongoing transactions (producer id -> first offset) as batches go by, and the
    aborted transaction each ABORT marker ends."""

    def __init__(self, ongoing: dict[int, int]) -> None:
        self.ongoing = ongoing

    def see(
        self, header: BatchHeader, batch: Callable[[], bytes | bytearray | memoryview]
    ) -> AbortedTxn | None:
        """Follow one batch (``batch`` gives its bytes, read only for a marker); the
        ``.txnindex`` entry it makes, if it ends an ongoing transaction with an ABORT."""
        producer_id = header.producer_id
        if producer_id < 0 or not header.is_transactional:
            return None
        if not header.is_control:
            self.ongoing.setdefault(producer_id, header.base_offset)
            return None
        first = self.ongoing.pop(producer_id, None)
        if first is None or marker_type(batch()) is not ControlRecordType.ABORT:
            return None
        stable = min(self.ongoing.values(), default=header.last_offset + 1)
        return AbortedTxn(producer_id, first, header.last_offset, stable)


def rebuild_txn_indexes(
    directory: Path,
    segments: Sequence[LogSegment],
    recovered: Sequence[LogSegment],
    *,
    log_start_offset: int,
) -> int:
    """Refill the (empty) ``.txnindex`` of each of ``recovered`` (segments of ``segments``,
    sorted by base offset); return the entries written."""
    if not recovered:
        return 0
    rebuilt = {id(segment) for segment in recovered}
    first_base = recovered[0].base_offset
    snapshot = load_latest_snapshot(directory, up_to_offset=first_base)
    start = log_start_offset if snapshot is None else snapshot.offset
    state = rebuild(
        snapshot,
        _headers(segments, start, first_base),
        log_start_offset=log_start_offset,
        end_offset=first_base,
    )
    aborted = AbortedTxns(state.ongoing_transactions())
    written = 0
    last = recovered[-1].base_offset
    for segment in segments:
        if segment.base_offset < first_base:
            continue
        if segment.base_offset > last:
            break
        for position, header in segment.batches():
            entry = aborted.see(header, functools.partial(segment.read, position, header.size))
            if entry is not None and id(segment) in rebuilt:
                segment.txn_index.append(entry)
                written += 1
    return written


def _headers(segments: Sequence[LogSegment], start: int, end: int) -> Iterator[BatchHeader]:
    """Batch headers of the segments holding ``[start, end)``."""
    bases = [segment.base_offset for segment in segments]
    first = max(bisect.bisect_right(bases, start) - 1, 0)
    for segment in segments[first:]:
        if segment.base_offset >= end:
            return
        for _, header in segment.batches():
            yield header
