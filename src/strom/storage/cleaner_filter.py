"""The cleaner's record rules applied to one batch (:func:`filter_batch`): what is kept,
dropped, emptied or stamped with a delete horizon, and the batch rebuilt as Kafka's cleaner
rebuilds it. :mod:`strom.storage.cleaner` has the rules (module doc, "A pass" step 3,
"Tombstones", "Transactions").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from strom.protocol.batch import DELETE_HORIZON_FLAG, BatchHeader, TimestampType
from strom.protocol.records import Record, build_batch, iter_records
from strom.storage.offset_map import OffsetMap

__all__ = ["FilterResult", "filter_batch", "has_delete_horizon"]


@dataclass(frozen=True, slots=True, kw_only=True)
class FilterResult:
    """What :func:`filter_batch` made of one batch."""

    data: bytes | memoryview | None
    """The batch to write (the input itself when ``copied``), or None when it is dropped."""
    header: BatchHeader | None
    copied: bool
    """Written byte for byte as it was."""
    records_read: int
    records_removed: int
    invalid_records: int
    """Records without a key (part of ``records_removed``)."""
    tombstones_removed: int
    """Tombstones past their delete horizon (part of ``records_removed``)."""
    tombstone_horizon: int | None
    """The delete horizon of the tombstones the written batch still holds, if any."""


def has_delete_horizon(header: BatchHeader) -> bool:
    """Whether a pass stamped the batch with a delete horizon (its base timestamp, KIP-534)."""
    return bool(header.attributes & DELETE_HORIZON_FLAG)


def filter_batch(
    data: bytes | memoryview,
    header: BatchHeader,
    *,
    offset_map: OffsetMap,
    now_ms: int,
    delete_retention_ms: int,
    retain_empty: bool,
    aborted: bool = False,
    discardable_marker: bool = False,
) -> FilterResult:
    """Apply the cleaner's record rules to one whole batch (see the module doc).

    ``retain_empty``: keep the batch, emptied, if every record goes (the last data batch of its
    producer id). Records at or above ``offset_map.end_offset`` are kept as they are.
    ``aborted``: a data batch of an aborted transaction (every record goes).
    ``discardable_marker``: a control batch whose transaction has no data left (stamped with a
    delete horizon, dropped once it passed).
    """
    if header.is_control:
        return _filter_marker(
            data,
            header,
            now_ms=now_ms,
            delete_retention_ms=delete_retention_ms,
            discardable=discardable_marker,
        )
    horizon = header.base_timestamp if has_delete_horizon(header) else None
    tombstones_expire = horizon is not None and now_ms >= horizon and not header.is_transactional
    end = offset_map.end_offset
    retained: list[Record] = []
    read = superseded = invalid = expired = 0
    holds_tombstone = False
    for record in iter_records(data):
        read += 1
        if aborted:
            superseded += 1
            continue
        if record.offset < end:
            key = record.key
            if key is None:
                invalid += 1
                continue
            if record.offset < offset_map.get(key):
                superseded += 1
                continue
            if record.value is None and tombstones_expire:
                expired += 1
                continue
        if record.value is None:
            holds_tombstone = True
        retained.append(record)
    removed = superseded + invalid + expired
    stamp = holds_tombstone and horizon is None and not header.is_transactional
    if stamp:
        horizon = now_ms + delete_retention_ms
    tombstone_horizon = horizon if holds_tombstone and not header.is_transactional else None
    new: bytes | memoryview | None
    new_header: BatchHeader | None
    if not retained and not retain_empty:  # also a batch emptied by an earlier pass
        new, new_header = None, None
    elif not removed and not stamp:
        new, new_header = data, header
    else:
        new = _rebuild(header, retained, delete_horizon_ms=horizon)
        new_header = BatchHeader.read(new)
    return FilterResult(
        data=new,
        header=new_header,
        copied=new is data,
        records_read=read,
        records_removed=removed,
        invalid_records=invalid,
        tombstones_removed=expired,
        tombstone_horizon=tombstone_horizon,
    )


def _filter_marker(
    data: bytes | memoryview,
    header: BatchHeader,
    *,
    now_ms: int,
    delete_retention_ms: int,
    discardable: bool,
) -> FilterResult:
    """A control batch: copied, stamped with a delete horizon, or dropped after it."""
    new: bytes | memoryview | None = data
    new_header: BatchHeader | None = header
    removed = 0
    if discardable and has_delete_horizon(header):
        if now_ms >= header.base_timestamp:
            new, new_header, removed = None, None, header.record_count
    elif discardable:
        new = _rebuild(
            header, list(iter_records(data)), delete_horizon_ms=now_ms + delete_retention_ms
        )
        new_header = BatchHeader.read(new)
    return FilterResult(
        data=new,
        header=new_header,
        copied=new is data,
        records_read=header.record_count,
        records_removed=removed,
        invalid_records=0,
        tombstones_removed=0,
        tombstone_horizon=None,
    )


def _rebuild(
    header: BatchHeader, records: Sequence[Record], *, delete_horizon_ms: int | None
) -> bytes:
    """Re-encode a filtered batch as Kafka's ``buildRetainedRecordsInto`` and
    ``writeEmptyHeader`` do: same base offset, last offset (so the last sequence stays), producer
    fields, timestamp type, leader epoch and codec; an empty batch keeps its max timestamp."""
    log_append_time = header.timestamp_type == TimestampType.LOG_APPEND_TIME
    return build_batch(
        records,
        base_offset=header.base_offset,
        last_offset_delta=header.last_offset_delta,
        compression=header.compression,
        timestamp_type=header.timestamp_type,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        is_transactional=header.is_transactional,
        is_control=header.is_control,
        partition_leader_epoch=header.partition_leader_epoch,
        delete_horizon_ms=delete_horizon_ms if records else None,
        max_timestamp=header.max_timestamp if log_append_time or not records else None,
    )
