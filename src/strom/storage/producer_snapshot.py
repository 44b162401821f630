"""Producer state snapshot files (``<20-digit offset>.snapshot``), in Kafka's format.

A snapshot holds the producer state of one partition as it was after every batch below its
offset had been applied, so recovery loads the newest usable one and replays batch headers from
its offset on, instead of reading the whole log. The codec is Kafka's
(``ProducerStateManager.writeSnapshot``/``readSnapshot``), all big-endian::

    version int16 (= 1)
    crc uint32            CRC-32C of every byte after this field
    count int32           number of entries
    count x entry:
        producer id int64, producer epoch int16, last sequence int32, last offset int64,
        offset delta int32, timestamp int64, coordinator epoch int32,
        current txn first offset int64 (-1: no transaction ongoing)

Only the *last* batch of each producer is kept (Kafka's format has room for one), so after a
restart duplicate detection covers that batch plus whatever is replayed from the log after it.

Writes are atomic: ``<name>.tmp``, fsync, rename, fsync of the directory, so a crash leaves the
old set of snapshots or the new one. A snapshot that fails to decode (bad CRC, unknown version,
wrong length) is treated as missing: :func:`load_latest_snapshot` deletes it and falls back to an
older one, and the caller rebuilds from the log, as Kafka does.

This module only knows files and bytes; :mod:`strom.storage.producer_state` turns entries into
producer state.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import crc32c

from strom.storage._files import fsync_directory

__all__ = [
    "SNAPSHOT_SUFFIX",
    "SNAPSHOT_VERSION",
    "CorruptSnapshotError",
    "LoadedSnapshot",
    "SnapshotEntry",
    "decode_snapshot",
    "delete_snapshots",
    "delete_snapshots_above",
    "delete_snapshots_below",
    "encode_snapshot",
    "list_snapshot_offsets",
    "load_latest_snapshot",
    "parse_snapshot_file_name",
    "read_snapshot",
    "retain_latest_snapshots",
    "snapshot_path",
    "write_snapshot",
]

SNAPSHOT_SUFFIX: Final = ".snapshot"
SNAPSHOT_VERSION: Final = 1
_TMP_SUFFIX: Final = ".tmp"

_PREFIX = struct.Struct(">hI")
"""version, crc"""
_COUNT = struct.Struct(">i")
_ENTRY = struct.Struct(">qhiqiqiq")
_CRC_START: Final = _PREFIX.size
"""The CRC covers everything after the version and the CRC (Kafka's ``PRODUCER_ENTRIES_OFFSET``)."""


class CorruptSnapshotError(ValueError):
    """A snapshot file that cannot be trusted; the message says why."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotEntry:
    """One producer as a snapshot file stores it (one row of Kafka's snapshot schema)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    """-1 when the producer has no data batch (e.g. only transaction markers so far)."""
    last_offset: int
    """Last offset of the producer's last data batch; -1 when there is none."""
    offset_delta: int
    """``last offset - first offset`` of that batch (= its last sequence - first sequence)."""
    timestamp: int
    """The producer's last timestamp: max timestamp of its last batch (or marker)."""
    coordinator_epoch: int
    current_txn_first_offset: int
    """First offset of the ongoing transaction; -1 when there is none."""


@dataclass(frozen=True, slots=True)
class LoadedSnapshot:
    """A snapshot read from disk: the state after every batch below ``offset``."""

    offset: int
    entries: tuple[SnapshotEntry, ...]


# --- codec -----------------------------------------------------------------------------------


def encode_snapshot(entries: Iterable[SnapshotEntry]) -> bytes:
    """The bytes of a snapshot file holding ``entries`` (in the order given)."""
    rows = list(entries)
    body = bytearray(_COUNT.pack(len(rows)))
    for entry in rows:
        body += _ENTRY.pack(
            entry.producer_id,
            entry.producer_epoch,
            entry.last_sequence,
            entry.last_offset,
            entry.offset_delta,
            entry.timestamp,
            entry.coordinator_epoch,
            entry.current_txn_first_offset,
        )
    return _PREFIX.pack(SNAPSHOT_VERSION, crc32c.crc32c(bytes(body))) + bytes(body)


def decode_snapshot(data: bytes | bytearray | memoryview) -> list[SnapshotEntry]:
    """The entries of a snapshot file; raise :class:`CorruptSnapshotError` if it is bad."""
    view = memoryview(data)
    if len(view) < _PREFIX.size + _COUNT.size:
        raise CorruptSnapshotError(f"snapshot of {len(view)} bytes is too short for its header")
    version, crc = _PREFIX.unpack_from(view)
    if version != SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"unknown snapshot version {version}")
    computed = crc32c.crc32c(view[_CRC_START:])
    if computed != crc:
        raise CorruptSnapshotError(f"CRC mismatch: stored {crc:#010x}, computed {computed:#010x}")
    (count,) = _COUNT.unpack_from(view, _PREFIX.size)
    start = _PREFIX.size + _COUNT.size
    if count < 0 or len(view) != start + count * _ENTRY.size:
        raise CorruptSnapshotError(
            f"snapshot says {count} entries but holds {len(view) - start} bytes of entries"
        )
    entries: list[SnapshotEntry] = []
    for index in range(count):
        (
            producer_id,
            producer_epoch,
            last_sequence,
            last_offset,
            offset_delta,
            timestamp,
            coordinator_epoch,
            current_txn_first_offset,
        ) = _ENTRY.unpack_from(view, start + index * _ENTRY.size)
        entries.append(
            SnapshotEntry(
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                last_sequence=last_sequence,
                last_offset=last_offset,
                offset_delta=offset_delta,
                timestamp=timestamp,
                coordinator_epoch=coordinator_epoch,
                current_txn_first_offset=current_txn_first_offset,
            )
        )
    return entries


# --- files -----------------------------------------------------------------------------------


def snapshot_path(directory: Path, offset: int) -> Path:
    """``<directory>/<offset, 20 digits>.snapshot``, as Kafka names it."""
    if offset < 0:
        raise ValueError(f"a snapshot offset cannot be negative: {offset}")
    return directory / f"{offset:020d}{SNAPSHOT_SUFFIX}"


def parse_snapshot_file_name(name: str) -> int | None:
    """The offset of a snapshot file name, or None for any other file."""
    digits, suffix = name[:20], name[20:]
    if suffix != SNAPSHOT_SUFFIX or not digits.isdigit() or not digits.isascii():
        return None
    return int(digits)


def list_snapshot_offsets(directory: Path) -> list[int]:
    """The offsets of the snapshot files in ``directory``, ascending (none if it is missing)."""
    offsets = [
        offset
        for name in _names(directory)
        if (offset := parse_snapshot_file_name(name)) is not None
    ]
    return sorted(offsets)


def write_snapshot(directory: Path, offset: int, entries: Iterable[SnapshotEntry]) -> Path:
    """Write (or replace) the snapshot at ``offset`` atomically and durably; return its path."""
    path = snapshot_path(directory, offset)
    temporary = path.with_name(path.name + _TMP_SUFFIX)
    data = encode_snapshot(entries)
    with temporary.open("wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())
    temporary.replace(path)
    fsync_directory(directory)
    return path


def read_snapshot(path: Path) -> list[SnapshotEntry]:
    """Decode one snapshot file; :class:`CorruptSnapshotError` names the file when it is bad."""
    data = path.read_bytes()
    try:
        return decode_snapshot(data)
    except CorruptSnapshotError as error:
        raise CorruptSnapshotError(f"{path}: {error}") from None


def load_latest_snapshot(directory: Path, *, up_to_offset: int) -> LoadedSnapshot | None:
    """The newest readable snapshot at or below ``up_to_offset``, or None.

    Corrupt snapshots met on the way are deleted (Kafka's ``loadFromSnapshot``), so the next
    start does not trip on them again; leftover ``.tmp`` files of interrupted writes go too.
    """
    _remove_temporaries(directory)
    for offset in reversed(list_snapshot_offsets(directory)):
        if offset > up_to_offset:
            continue
        path = snapshot_path(directory, offset)
        try:
            entries = read_snapshot(path)
        except CorruptSnapshotError:
            path.unlink(missing_ok=True)
            continue
        return LoadedSnapshot(offset, tuple(entries))
    return None


def delete_snapshots(directory: Path, offsets: Sequence[int]) -> list[int]:
    """Delete the snapshots at ``offsets`` (missing ones are fine); return those deleted."""
    deleted: list[int] = []
    for offset in offsets:
        path = snapshot_path(directory, offset)
        if path.exists():
            path.unlink(missing_ok=True)
            deleted.append(offset)
    if deleted:
        fsync_directory(directory)
    return deleted


def delete_snapshots_above(directory: Path, offset: int) -> list[int]:
    """Delete every snapshot at an offset strictly above ``offset`` (after a truncation)."""
    return delete_snapshots(directory, [o for o in list_snapshot_offsets(directory) if o > offset])


def delete_snapshots_below(directory: Path, offset: int) -> list[int]:
    """Delete every snapshot strictly below ``offset`` (the log start offset, or the first
    segment's base offset after retention): replaying from it would need deleted batches."""
    return delete_snapshots(directory, [o for o in list_snapshot_offsets(directory) if o < offset])


def retain_latest_snapshots(directory: Path, keep: int) -> list[int]:
    """Delete all but the ``keep`` newest snapshots; return the offsets deleted."""
    if keep < 1:
        raise ValueError(f"keep at least one snapshot, not {keep}")
    return delete_snapshots(directory, list_snapshot_offsets(directory)[:-keep])


def _names(directory: Path) -> list[str]:
    try:
        return [path.name for path in directory.iterdir()]
    except FileNotFoundError:
        return []


def _remove_temporaries(directory: Path) -> None:
    for name in _names(directory):
        if name.endswith(SNAPSHOT_SUFFIX + _TMP_SUFFIX):
            (directory / name).unlink(missing_ok=True)
