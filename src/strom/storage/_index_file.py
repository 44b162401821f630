"""What the offset and time indexes share: a file of fixed-size entries, memory-mapped.

As in Kafka's ``AbstractIndex``: while its segment is active an index file is preallocated to
its maximum size (rounded down to a whole number of entries) and read through a shared mmap;
when the segment rolls or closes the file is trimmed to the entries it holds. Entries are
written with ``pwrite``, not through the map: the first store through a writable map of the
sparse preallocated file cost ~2 ms of CPU (ext4; up to 20 ms wall on a busy disk), on the
event loop, at each new segment's first offset and time index entries, on leaders and
followers alike (docs/benchmarks.md, "Transaction commit, one broker and three"); a pwrite
costs microseconds. The page cache is shared, so the map reads what was written. The number
of entries of a file opened from disk is its length divided by the entry size, so an index
left preallocated by a crash shows zero entries at its tail, which :meth:`IndexFile.check`
reports as corruption (entries must increase) and recovery rebuilds.

An inactive (read-only) index maps its file only when first searched, to keep file
descriptors and address space for the segments actually read.
"""

from __future__ import annotations

import mmap
import os
import struct
from pathlib import Path
from typing import ClassVar


class CorruptIndexError(Exception):
    """An index file failed its sanity check; the segment's indexes must be rebuilt."""


class IndexFile:
    """A file of ``entry_size``-byte entries whose keys strictly increase."""

    entry_size: ClassVar[int]
    _entry: ClassVar[struct.Struct]

    def __init__(
        self, path: Path, base_offset: int, *, max_index_size: int, writable: bool
    ) -> None:
        self.path = path
        self.base_offset = base_offset
        self._max_index_size = max_index_size
        self._capacity = max_index_size // self.entry_size
        """The entries that fit while writable (kept as a field: appends check it)."""
        self._mm: mmap.mmap | None = None
        self._fd = -1
        """Open (read-write) while the index is writable: where entries are written."""
        self._writable = False
        self._last: tuple[int, int] | None = None  # the raw last entry, once read
        self.created = not path.exists()
        """The file was missing and has just been created empty."""
        if self.created:
            path.touch()
        length = path.stat().st_size
        self._entries = length // self.entry_size
        self._length_ok = length % self.entry_size == 0
        if writable:
            self.resize(max_index_size)

    # --- size and state --------------------------------------------------------------------

    @property
    def entries(self) -> int:
        return self._entries

    @property
    def max_entries(self) -> int:
        return self._capacity if self._writable else self._entries

    @property
    def is_full(self) -> bool:
        return not self._writable or self._entries >= self._capacity

    @property
    def writable(self) -> bool:
        return self._writable

    @property
    def size_in_bytes(self) -> int:
        return self._entries * self.entry_size

    def resize(self, max_index_size: int) -> None:
        """Make the index appendable: preallocate its file to ``max_index_size`` bytes."""
        self._close_map()
        self._max_index_size = max_index_size
        self._capacity = max_index_size // self.entry_size
        length = max(self._capacity, self._entries) * self.entry_size
        os.truncate(self.path, length)
        self._fd = os.open(self.path, os.O_RDWR)
        if length:
            self._mm = mmap.mmap(self._fd, length, access=mmap.ACCESS_READ)
        self._writable = True

    def trim(self) -> None:
        """Shrink the file to the entries it holds; the index becomes read-only."""
        self._close_map()
        os.truncate(self.path, self._entries * self.entry_size)
        self._writable = False

    def reset(self) -> None:
        """Drop every entry (before a rebuild); the index becomes appendable."""
        self._entries = 0
        self._last = None
        self._length_ok = True
        if not self._writable:
            self.resize(self._max_index_size)

    def _keep_entries(self, count: int) -> None:
        """Drop the entries from ``count`` on; a read-only file is cut at once."""
        if count >= self._entries:
            return
        self._entries = count
        self._last = None
        if not self._writable:
            self._close_map()
            os.truncate(self.path, count * self.entry_size)

    def flush(self) -> None:
        """Write the entries to the device (fsync the file)."""
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def close(self) -> None:
        """Trim and unmap; the object must not be used afterwards."""
        if self._writable:
            self.trim()
        self._close_map()

    def release(self) -> None:
        """Unmap without trimming (before the file is deleted)."""
        self._close_map()
        self._writable = False

    def rename(self, path: Path) -> None:
        """Rename the file (its map stays valid: it is bound to the inode, not the name)."""
        self.path.rename(path)
        self.path = path

    def delete(self) -> None:
        self._close_map()
        self._writable = False
        self.path.unlink(missing_ok=True)

    # --- entries ---------------------------------------------------------------------------

    def _map(self) -> mmap.mmap:
        if self._mm is None:
            with self.path.open("rb") as file:
                self._mm = mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ)
        return self._mm

    def _close_map(self) -> None:
        """Unmap, and close the file written to."""
        if self._mm is not None:
            self._mm.close()
            self._mm = None
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def _read(self, n: int) -> tuple[int, int]:
        pair: tuple[int, int] = self._entry.unpack_from(self._map(), n * self.entry_size)
        return pair

    def _write(self, first: int, second: int) -> None:
        if not self._writable:
            raise ValueError(f"index {self.path.name} is not writable")
        os.pwrite(self._fd, self._entry.pack(first, second), self._entries * self.entry_size)
        self._entries += 1
        self._last = (first, second)

    def _last_raw(self) -> tuple[int, int] | None:
        """The last entry as stored (relative offset), or None when there is none."""
        if not self._entries:
            return None
        if self._last is None:
            self._last = self._read(self._entries - 1)
        return self._last

    def _largest_lower_bound(self, target: int, key: int) -> int:
        """Index of the last entry whose field ``key`` is <= ``target``; -1 when there is none.

        Keys strictly increase and, in a log, nearly linearly (offsets and positions grow with
        the bytes written), so the entry is guessed by interpolation between the first and last
        keys, bracketed by galloping from the guess (steps 1, 2, 4, ...) and then bisected: a
        few probes on a log's index, at most about twice a plain bisection's on any other.
        """
        last = self._entries - 1
        if last < 0:
            return -1
        entries, unpack, entry_size = self._map(), self._entry.unpack_from, self.entry_size
        first_key: int = unpack(entries, 0)[key]
        if first_key > target:
            return -1
        last_key: int = unpack(entries, last * entry_size)[key]
        if last_key <= target:
            return last
        # Now key(0) <= target < key(last): find low, high with key(low) <= target < key(high).
        guess = (target - first_key) * last // (last_key - first_key)
        step = 1
        if unpack(entries, guess * entry_size)[key] <= target:
            low, high = guess, last
            while low + step < high:
                if unpack(entries, (low + step) * entry_size)[key] > target:
                    high = low + step
                    break
                low += step
                step *= 2
        else:
            low, high = 0, guess
            while high - step > low:
                if unpack(entries, (high - step) * entry_size)[key] <= target:
                    low = high - step
                    break
                high -= step
                step *= 2
        while high - low > 1:
            middle = (low + high) // 2
            if unpack(entries, middle * entry_size)[key] <= target:
                low = middle
            else:
                high = middle
        return low

    def _first_at_least(self, target: int, key: int) -> int:
        """Index of the first entry whose field ``key`` is >= ``target`` (``entries`` if none)."""
        return self._largest_lower_bound(target - 1, key) + 1

    def _read_all(self) -> bytes:
        with self.path.open("rb") as file:
            return file.read(self._entries * self.entry_size)

    def check(self, *, log_size: int) -> None:
        """Kafka's sanity check and more; raise CorruptIndexError when the file is unusable."""
        if not self._length_ok:
            raise CorruptIndexError(
                f"{self.path.name}: length is not a multiple of {self.entry_size} bytes"
            )
        self._check_entries(self._read_all(), log_size=log_size)

    def _check_entries(self, data: bytes, *, log_size: int) -> None:
        raise NotImplementedError
