"""The time index (``.timeindex``): Kafka's format, 12-byte entries.

Each entry is ``(int64 timestamp, int32 offset - base offset)``, big-endian; timestamps strictly
increase, offsets never decrease. An entry ``(t, o)`` says the largest timestamp of the segment
up to the batch ending at offset ``o`` is ``t``: no record before that batch has a timestamp
>= ``t``. A lookup for ``T`` returns the last entry whose timestamp is <= ``T``; the first
record with a timestamp >= ``T`` is in the batch ending at its offset or later.

One slot is kept free (:attr:`TimeIndex.is_full` is ``entries >= max_entries - 1``) for the
entry the segment writes when it becomes inactive, which records its true largest timestamp.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import ClassVar, NamedTuple

from strom.protocol.batch import NO_TIMESTAMP
from strom.storage._index_file import CorruptIndexError, IndexFile

__all__ = ["CorruptIndexError", "TimeIndex", "TimestampOffset"]


class TimestampOffset(NamedTuple):
    timestamp: int
    offset: int


class TimeIndex(IndexFile):
    entry_size: ClassVar[int] = 12
    _entry: ClassVar[struct.Struct] = struct.Struct(">qi")

    def __init__(
        self, path: Path, base_offset: int, *, max_index_size: int, writable: bool
    ) -> None:
        super().__init__(path, base_offset, max_index_size=max_index_size, writable=writable)

    @property
    def is_full(self) -> bool:
        return not self._writable or self._entries >= self._capacity - 1

    def entry(self, n: int) -> TimestampOffset:
        timestamp, relative = self._read(n)
        return TimestampOffset(timestamp, self.base_offset + relative)

    @property
    def last_entry(self) -> TimestampOffset:
        """The last entry, or ``(NO_TIMESTAMP, base offset)`` when there is none."""
        last = self._last_raw()
        if last is None:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return TimestampOffset(last[0], self.base_offset + last[1])

    def maybe_append(self, timestamp: int, offset: int, *, skip_full_check: bool = False) -> None:
        """Add ``(timestamp, offset)`` if ``timestamp`` is above the last entry's.

        ``skip_full_check`` lets the final entry of a segment use the reserved slot.
        """
        room = self._capacity if skip_full_check else self._capacity - 1
        if not self._writable or self._entries >= room:
            raise ValueError(f"{self.path.name} is full ({self._entries} entries)")
        relative = offset - self.base_offset
        last = self._last if self._last is not None else self._last_raw()
        if last is not None:
            if relative < last[1]:
                raise ValueError(
                    f"time index offset {offset} is below the last entry's "
                    f"{self.base_offset + last[1]}"
                )
            if timestamp <= last[0]:
                return
        if timestamp <= NO_TIMESTAMP:
            return
        if not 0 <= relative < 2**31:
            raise ValueError(f"offset {offset} does not fit segment base {self.base_offset}")
        self._write(timestamp, relative)

    def lookup(self, timestamp: int) -> TimestampOffset:
        """The last entry whose timestamp is <= ``timestamp``; ``(-1, base offset)`` if none."""
        n = self._largest_lower_bound(timestamp, 0)
        if n < 0:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return self.entry(n)

    def truncate_to(self, offset: int) -> None:
        """Remove every entry whose offset is >= ``offset``."""
        self._keep_entries(self._first_at_least(offset - self.base_offset, 1))

    def _check_entries(self, data: bytes, *, log_size: int) -> None:
        name = self.path.name
        previous: tuple[int, int] | None = None
        for timestamp, relative in self._entry.iter_unpack(data):
            if relative < 0:
                raise CorruptIndexError(f"{name}: negative relative offset {relative}")
            if previous is not None and (timestamp <= previous[0] or relative < previous[1]):
                raise CorruptIndexError(f"{name}: entries do not increase")
            previous = (timestamp, relative)
