"""A segment's aborted-transaction index, ``<base offset>.txnindex`` (Kafka's ``TransactionIndex``).

One 34-byte entry per transaction aborted by an ABORT marker written in the segment, in
marker order: ``version`` (int16, 0), ``producer id``, ``first offset`` (the transaction's first
offset in the partition, possibly in an earlier segment), ``last offset`` (the marker's offset)
and the ``last stable offset`` right after the marker (int64 each, big-endian). Last offsets
strictly increase within a file.

The file exists only once an entry is written (most segments never have one). Entries are
read once, on first use, and kept in memory; an append writes one entry at the end of the
file (:meth:`TransactionIndex.flush` fsyncs it, with the segment). A read_committed Fetch asks
each segment from the fetch offset's on for the transactions overlapping the fetched range
(:meth:`TransactionIndex.collect`).

A file whose length is not a multiple of 34, with an unknown version, or whose last offsets
do not increase fails :meth:`TransactionIndex.check`: the loader then recovers the segment and
rebuilds its index from the log (:mod:`strom.storage.txn_recovery`).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from strom.storage._index_file import CorruptIndexError

__all__ = ["ENTRY_SIZE", "AbortedTxn", "TransactionIndex"]

_ENTRY: Final = struct.Struct(">hqqqq")
ENTRY_SIZE: Final = _ENTRY.size
"""34 bytes: version, producer id, first offset, last offset, last stable offset."""
_VERSION: Final = 0


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """One aborted transaction of one producer in one partition."""

    producer_id: int
    first_offset: int
    last_offset: int
    """The ABORT marker's offset."""
    last_stable_offset: int
    """The partition's last stable offset right after the marker was written."""

    def pack(self) -> bytes:
        return _ENTRY.pack(
            _VERSION,
            self.producer_id,
            self.first_offset,
            self.last_offset,
            self.last_stable_offset,
        )


class TransactionIndex:
    """The aborted transactions whose ABORT marker is in one segment (see the module doc)."""

    def __init__(self, path: Path, base_offset: int) -> None:
        self.path = path
        self.base_offset = base_offset
        self._entries: list[AbortedTxn] | None = None
        self._dirty = False

    @property
    def entries(self) -> Sequence[AbortedTxn]:
        """Every entry, in marker order (read from the file on first use)."""
        return self._load()

    def _load(self) -> list[AbortedTxn]:
        if self._entries is None:
            self._entries = _read_entries(self.path)
        return self._entries

    def check(self) -> None:
        """Raise :class:`CorruptIndexError` if the file is not a well-formed index."""
        self._entries = None
        self._load()

    def append(self, txn: AbortedTxn) -> None:
        """Add an entry; its last offset must be above every entry's so far."""
        entries = self._load()
        if entries and txn.last_offset <= entries[-1].last_offset:
            raise ValueError(
                f"{self.path.name}: aborted transaction ending at {txn.last_offset} is not "
                f"after the last entry's {entries[-1].last_offset}"
            )
        with self.path.open("ab") as file:
            file.write(txn.pack())
        entries.append(txn)
        self._dirty = True

    def extend(self, txns: Iterable[AbortedTxn]) -> None:
        for txn in txns:
            self.append(txn)

    def collect(self, fetch_offset: int, upper_bound: int) -> tuple[list[AbortedTxn], bool]:
        """The transactions overlapping ``[fetch_offset, upper_bound)`` (Kafka's
        ``collectAbortedTxns``), and whether the search is complete: an entry whose last
        stable offset reaches ``upper_bound`` means later segments cannot add any."""
        found: list[AbortedTxn] = []
        for txn in self._load():
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound:
                return found, True
        return found, False

    def truncate_to(self, offset: int) -> None:
        """Drop the entries whose marker is at or above ``offset`` (the log was truncated)."""
        entries = self._load()
        keep = sum(1 for txn in entries if txn.last_offset < offset)
        if keep == len(entries):
            return
        del entries[keep:]
        self._rewrite(entries)

    def reset(self) -> None:
        """Forget every entry and remove the file (the segment is being recovered)."""
        self.path.unlink(missing_ok=True)
        self._entries = []
        self._dirty = False

    def flush(self) -> None:
        """fsync the file if entries were appended since the last flush."""
        if not self._dirty:
            return
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            self._dirty = False
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        self._dirty = False

    def rename(self, path: Path) -> None:
        """Follow the segment's files to a new name (suffix change)."""
        if self.path.exists():
            self.path.rename(path)
        self.path = path

    def _rewrite(self, entries: Sequence[AbortedTxn]) -> None:
        if not entries:
            self.path.unlink(missing_ok=True)
            self._dirty = False
            return
        with self.path.open("r+b") as file:
            file.truncate(len(entries) * ENTRY_SIZE)
            file.flush()
            os.fsync(file.fileno())
        self._dirty = False

    def __repr__(self) -> str:
        count = "?" if self._entries is None else len(self._entries)
        return f"TransactionIndex({self.path.name}, entries={count})"


def _read_entries(path: Path) -> list[AbortedTxn]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    if len(data) % ENTRY_SIZE:
        raise CorruptIndexError(
            f"{path.name}: {len(data)} bytes is not a whole number of {ENTRY_SIZE}-byte entries"
        )
    entries: list[AbortedTxn] = []
    for version, producer_id, first, last, lso in _ENTRY.iter_unpack(data):
        if version != _VERSION:
            raise CorruptIndexError(f"{path.name}: entry version {version}")
        if entries and last <= entries[-1].last_offset:
            raise CorruptIndexError(
                f"{path.name}: last offset {last} is not after {entries[-1].last_offset}"
            )
        if first > last:
            raise CorruptIndexError(f"{path.name}: first offset {first} after last {last}")
        entries.append(AbortedTxn(producer_id, first, last, lso))
    return entries
