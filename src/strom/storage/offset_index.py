"""The sparse offset index (``.index``): Kafka's format, 8-byte entries.

Each entry is ``(int32 offset - base offset, int32 file position)``, big-endian, both strictly
increasing. An entry ``(o, p)`` says the batch starting at file position ``p`` ends at offset
``o`` (Kafka 3.8+ indexes a batch by its last offset), so the batch holding any offset >= ``o``
starts at or after ``p``: a lookup returns the last entry <= the target and the reader scans
batch headers from there. The segment adds an entry every ``index.interval.bytes``.
"""

from __future__ import annotations

import struct
from array import array
from pathlib import Path
from sys import byteorder
from typing import ClassVar, NamedTuple

from strom.storage._index_file import CorruptIndexError, IndexFile

__all__ = ["CorruptIndexError", "OffsetIndex", "OffsetPosition"]


class OffsetPosition(NamedTuple):
    offset: int
    position: int


class OffsetIndex(IndexFile):
    entry_size: ClassVar[int] = 8
    _entry: ClassVar[struct.Struct] = struct.Struct(">ii")

    def __init__(
        self, path: Path, base_offset: int, *, max_index_size: int, writable: bool
    ) -> None:
        super().__init__(path, base_offset, max_index_size=max_index_size, writable=writable)

    def entry(self, n: int) -> OffsetPosition:
        relative, position = self._read(n)
        return OffsetPosition(self.base_offset + relative, position)

    @property
    def last_offset(self) -> int:
        """The offset of the last entry, or the base offset when there is none."""
        last = self._last_raw()
        return self.base_offset if last is None else self.base_offset + last[0]

    def append(self, offset: int, position: int) -> None:
        """Add ``(offset, position)``; both must be above the last entry's."""
        relative = offset - self.base_offset
        last = self._last if self._last is not None else self._last_raw()
        if last is not None and (relative <= last[0] or position <= last[1]):
            raise ValueError(
                f"index entry ({offset}, {position}) is not after the last one "
                f"({self.base_offset + last[0]}, {last[1]})"
            )
        if not 0 <= relative < 2**31:
            raise ValueError(f"offset {offset} does not fit segment base {self.base_offset}")
        if self.is_full:
            raise ValueError(f"{self.path.name} is full ({self._entries} entries)")
        self._write(relative, position)

    def lookup(self, offset: int) -> OffsetPosition:
        """The last entry whose offset is <= ``offset``; ``(base offset, 0)`` when none is."""
        n = self._largest_lower_bound(offset - self.base_offset, 0)
        if n < 0:
            return OffsetPosition(self.base_offset, 0)
        return self.entry(n)

    def batch_start_before(self, position: int) -> int:
        """A batch boundary at or below the start of the last batch ending at or before
        ``position``: the entry before the last entry at or below ``position`` (whose batch
        ends by the next entry's position), or 0."""
        n = self._largest_lower_bound(position, 1)
        return self._read(n - 1)[1] if n > 0 else 0

    def truncate_to(self, offset: int) -> None:
        """Remove every entry whose offset is >= ``offset``."""
        self._keep_entries(self._first_at_least(offset - self.base_offset, 0))

    def _check_entries(self, data: bytes, *, log_size: int) -> None:
        values = array("i")
        values.frombytes(data)
        if byteorder == "little":
            values.byteswap()
        offsets, positions = values[0::2], values[1::2]
        name = self.path.name
        if offsets and (offsets[0] < 0 or positions[0] < 0):
            raise CorruptIndexError(f"{name}: negative first entry")
        if not all(map(int.__lt__, offsets, offsets[1:])):
            raise CorruptIndexError(f"{name}: offsets do not strictly increase")
        if not all(map(int.__lt__, positions, positions[1:])):
            raise CorruptIndexError(f"{name}: positions do not strictly increase")
        if positions and positions[-1] >= max(log_size, 1):
            raise CorruptIndexError(f"{name}: position {positions[-1]} is past the log's end")
