"""One log segment: ``<base offset>.log`` with its ``.index``, ``.timeindex`` and ``.txnindex``.

The ``.log`` file holds whole v2 batches exactly as appended (offsets already assigned); the
segment's in-memory ``size`` is where valid data ends (the file may be longer when
preallocated). Everything in ``[0, size)`` is trusted: it was validated before it was written,
or by :meth:`LogSegment.recover`. Batch headers are read with ``pread`` through a small window
(:meth:`LogSegment.batches`); records are decoded only where the semantics need them (the exact
record of a timestamp lookup). The ``.txnindex`` (:mod:`strom.storage.txn_index`) exists only
once a transaction is aborted in the segment; the partition log appends to it.

The file names carry an optional suffix: ``.cleaned`` and ``.swap`` for a segment the cleaner
is building and swapping in (see ``NOTES.md``), ``.deleted`` just before removal.

Not thread-safe: one owner calls it. A cleaner in another thread may read an inactive segment
(its bytes never change until it is replaced or deleted by the owner).
"""

from __future__ import annotations

import contextlib
import mmap
import os
import struct
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Final, NamedTuple

from strom.common import ErrorCode, KafkaError
from strom.protocol.batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    NO_TIMESTAMP,
    BatchHeader,
    BatchSpan,
    BatchSummary,
    read_batch_span,
    scan_batches,
)
from strom.protocol.records import iter_records
from strom.storage.corrupt_segment import CorruptSegmentError, valid_batch_follows
from strom.storage.file_region import FileRegion
from strom.storage.log_config import LogConfig
from strom.storage.offset_index import CorruptIndexError, OffsetIndex
from strom.storage.time_index import TimeIndex
from strom.storage.txn_index import TransactionIndex

LOG_SUFFIX: Final = ".log"
INDEX_SUFFIX: Final = ".index"
TIME_INDEX_SUFFIX: Final = ".timeindex"
TXN_INDEX_SUFFIX: Final = ".txnindex"
CLEANED_SUFFIX: Final = ".cleaned"
SWAP_SUFFIX: Final = ".swap"
DELETED_SUFFIX: Final = ".deleted"
FILE_KINDS: Final = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)

_SCAN_WINDOW: Final = 16 * 1024
_FIRST_WINDOW: Final = 4 * 1024
"""A walk's first read: about one index interval, what a lookup from an index entry walks."""
_RECOVERY_CHUNK: Final = 8 * 1024 * 1024
_INT32_MAX: Final = 2**31 - 1
_LENGTH = struct.Struct(">i")


def segment_file_name(base_offset: int, kind: str = LOG_SUFFIX, suffix: str = "") -> str:
    """``00000000000000000042.log`` and friends: the base offset on 20 digits, as Kafka."""
    return f"{base_offset:020d}{kind}{suffix}"


def parse_segment_file_name(name: str) -> tuple[int, str, str] | None:
    """``(base offset, kind, suffix)`` of a segment file name, or None for any other file."""
    digits, dot, rest = name.partition(".")
    if len(digits) != 20 or not digits.isdigit() or not dot:
        return None
    kind, _, suffix = rest.partition(".")
    if f".{kind}" not in FILE_KINDS:
        return None
    return int(digits), f".{kind}", f".{suffix}" if suffix else ""


def _storage_error(message: str) -> KafkaError:
    return KafkaError(ErrorCode.kafka_storage_error, message)


class OffsetTimestamp(NamedTuple):
    """An offset and the timestamp of the record at it (ListOffsets' answer)."""

    offset: int
    timestamp: int


class BatchLocation(NamedTuple):
    """Where a batch is in a segment file and which offsets it holds."""

    position: int
    size: int
    base_offset: int
    last_offset: int


class LogSegment:
    """A ``.log`` file and its two indexes; see the module doc. Build with create() or open()."""

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        *,
        fd: int,
        size: int,
        offset_index: OffsetIndex,
        time_index: TimeIndex,
        index_interval_bytes: int,
        created_ms: int,
        suffix: str,
        fresh: bool,
    ) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.offset_index = offset_index
        self.time_index = time_index
        self.txn_index = TransactionIndex(
            directory / segment_file_name(base_offset, TXN_INDEX_SUFFIX, suffix), base_offset
        )
        self.index_interval_bytes = index_interval_bytes
        self.created_ms = created_ms
        self._suffix = suffix
        self._log_path = directory / segment_file_name(base_offset, LOG_SUFFIX, suffix)
        self._fd = fd
        self._size = size
        self._bytes_since_last_index_entry = 0
        # Lazily loaded for a segment opened from disk; exact for a fresh one.
        self._next_offset: int | None = base_offset if fresh else None
        self._max_timestamp: int | None = NO_TIMESTAMP if fresh else None
        self._offset_of_max_timestamp = base_offset
        self._first_batch_timestamp: int | None = None
        self._first_batch_known = fresh

    # --- construction ----------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        directory: Path,
        base_offset: int,
        *,
        config: LogConfig,
        now_ms: int,
        suffix: str = "",
    ) -> LogSegment:
        """A new, empty, active segment (the cleaner passes ``suffix=CLEANED_SUFFIX``).

        Index files left over at that name are replaced; a non-empty ``.log`` is an error.
        """
        log_path = directory / segment_file_name(base_offset, LOG_SUFFIX, suffix)
        if log_path.exists() and log_path.stat().st_size > 0:
            raise _storage_error(f"cannot create segment {log_path}: a non-empty file is there")
        for kind in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
            (directory / segment_file_name(base_offset, kind, suffix)).unlink(missing_ok=True)
        fd = os.open(log_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if config.preallocate:
                os.ftruncate(fd, config.segment_bytes)
            offset_index, time_index = _open_indexes(
                directory, base_offset, suffix=suffix, config=config, writable=True
            )
        except BaseException:
            os.close(fd)
            raise
        return cls(
            directory,
            base_offset,
            fd=fd,
            size=0,
            offset_index=offset_index,
            time_index=time_index,
            index_interval_bytes=config.index_interval_bytes,
            created_ms=now_ms,
            suffix=suffix,
            fresh=True,
        )

    @classmethod
    def open(
        cls,
        directory: Path,
        base_offset: int,
        *,
        config: LogConfig,
        now_ms: int,
        suffix: str = "",
    ) -> LogSegment:
        """An existing segment, inactive (read-only indexes); missing index files come up empty.

        Call :meth:`index_problem` to know whether its indexes can be trusted and
        :meth:`make_active` to append to it.
        """
        log_path = directory / segment_file_name(base_offset, LOG_SUFFIX, suffix)
        fd = os.open(log_path, os.O_RDWR)
        try:
            size = os.fstat(fd).st_size
            offset_index, time_index = _open_indexes(
                directory, base_offset, suffix=suffix, config=config, writable=False
            )
        except BaseException:
            os.close(fd)
            raise
        return cls(
            directory,
            base_offset,
            fd=fd,
            size=size,
            offset_index=offset_index,
            time_index=time_index,
            index_interval_bytes=config.index_interval_bytes,
            created_ms=now_ms,
            suffix=suffix,
            fresh=False,
        )

    # --- state -----------------------------------------------------------------------------

    @property
    def suffix(self) -> str:
        return self._suffix

    @property
    def log_path(self) -> Path:
        return self._log_path

    @property
    def size(self) -> int:
        """Bytes of valid batches in the ``.log`` file."""
        return self._size

    @property
    def next_offset(self) -> int:
        """The offset after the last batch; the base offset when the segment is empty."""
        if self._next_offset is None:
            next_offset = self.base_offset
            entries = self.offset_index.entries
            start = self.offset_index.entry(entries - 1).position if entries else 0
            for _, header in self.batches(start):
                next_offset = header.next_offset
            self._next_offset = next_offset
        return self._next_offset

    @property
    def max_timestamp(self) -> int:
        """The largest batch max timestamp in the segment (NO_TIMESTAMP when none)."""
        self._load_max_timestamp()
        assert self._max_timestamp is not None
        return self._max_timestamp

    @property
    def offset_of_max_timestamp(self) -> int:
        """The last offset of the first batch carrying :attr:`max_timestamp`."""
        self._load_max_timestamp()
        return self._offset_of_max_timestamp

    @property
    def largest_timestamp(self) -> int:
        """What retention compares: the max timestamp, or the file's mtime without any (Kafka)."""
        if self.max_timestamp >= 0:
            return self.max_timestamp
        return os.fstat(self._fd).st_mtime_ns // 1_000_000

    @property
    def first_batch_timestamp(self) -> int | None:
        """The first batch's max timestamp (segment.ms counts from it); None when empty."""
        if not self._first_batch_known:
            self._first_batch_known = True
            self._first_batch_timestamp = next(
                (header.max_timestamp for _, header in self.batches(0)), None
            )
        return self._first_batch_timestamp

    @property
    def is_index_full(self) -> bool:
        return self.offset_index.is_full or self.time_index.is_full

    def can_hold_offset(self, offset: int) -> bool:
        """Whether ``offset`` fits the indexes' 32-bit offsets relative to the base offset."""
        return 0 <= offset - self.base_offset <= _INT32_MAX

    def index_problem(self) -> str | None:
        """Why the indexes cannot be trusted (missing or failing the sanity check), or None."""
        for index in (self.offset_index, self.time_index):
            if index.created and self._size > 0:
                return f"{index.path.name} is missing"
            try:
                index.check(log_size=self._size)
            except CorruptIndexError as error:
                return str(error)
        try:
            self.txn_index.check()
        except CorruptIndexError as error:
            return str(error)
        return None

    def _load_max_timestamp(self) -> None:
        if self._max_timestamp is not None:
            return
        # The time index's last entry, then whatever the batches after it say (Kafka's way).
        timestamp, offset = self.time_index.last_entry
        start = self.offset_index.lookup(offset).position if self.time_index.entries else 0
        for _, header in self.batches(start):
            if header.max_timestamp > timestamp:
                timestamp, offset = header.max_timestamp, header.last_offset
        self._max_timestamp, self._offset_of_max_timestamp = timestamp, offset

    # --- append ----------------------------------------------------------------------------

    def append(self, data: bytes | bytearray | memoryview, headers: Sequence[BatchHeader]) -> None:
        """Write whole batches whose offsets are assigned; ``headers`` describe ``data``.

        Offsets must be above :attr:`next_offset` and fit the segment (check
        :meth:`can_hold_offset` first); gaps are allowed (the cleaner's segments have them).
        """
        self.append_batches(data, [header.summary for header in headers])

    def append_batches(
        self, data: bytes | bytearray | memoryview, batches: Sequence[BatchSummary]
    ) -> None:
        """:meth:`append` with summaries for headers (as the append path has them)."""
        if not batches:
            return
        first_offset = batches[0][0]
        last_base_offset, _, last_offset_delta, _ = batches[-1]
        last_offset = last_base_offset + last_offset_delta
        if first_offset < self.next_offset or last_offset - self.base_offset > _INT32_MAX:
            raise ValueError(
                f"batches {first_offset}..{last_offset} do not fit segment "
                f"{self.base_offset} ending at {self.next_offset}"
            )
        if self._max_timestamp is None:
            self._load_max_timestamp()
        self._write(data, self._size)
        self._account(batches)

    def _write(self, data: bytes | bytearray | memoryview, position: int) -> None:
        try:
            written = os.pwrite(self._fd, data, position)
            if written < len(data):  # rare: a short write, finish it
                view = memoryview(data)
                while written < len(view):
                    written += os.pwrite(self._fd, view[written:], position + written)
        except OSError as error:
            with contextlib.suppress(OSError):  # leave no partial batch behind when we can
                os.ftruncate(self._fd, position)
            raise _storage_error(f"cannot write to {self._log_path}: {error}") from error

    # --- reading ---------------------------------------------------------------------------

    def batches(self, start: int = 0, end: int | None = None) -> Iterator[tuple[int, BatchHeader]]:
        """``(position, header)`` of each batch from ``start`` (a batch boundary) to ``end``.

        Reads headers only, through a window of a few KB; the end is fixed when iteration
        starts, so appends during it are not seen.
        """
        for position, _, window, at in self._walk(start, end):
            yield position, BatchHeader.read(window, at)

    def _walk(self, start: int, end: int | None) -> Iterator[tuple[int, BatchSpan, bytes, int]]:
        """What :meth:`batches` walks, checked but not decoded: ``(position, span, window,
        at)``, the header being ``window[at : at + HEADER_SIZE]``."""
        stop = self._size if end is None else min(end, self._size)
        fd = self._fd
        window = b""
        window_start = position = start
        read_size = _FIRST_WINDOW
        while position < stop:
            at = position - window_start
            if at + HEADER_SIZE > len(window):
                window = os.pread(fd, read_size, position)
                window_start, at = position, 0
            if len(window) - at < HEADER_SIZE:
                raise _storage_error(f"{self._log_path}: truncated batch header at {position}")
            span = read_batch_span(window, at)
            _, batch_length, magic, _ = span
            size = LOG_OVERHEAD + batch_length
            if (
                magic != MAGIC_V2
                or batch_length < HEADER_SIZE - LOG_OVERHEAD
                or position + size > stop
            ):
                raise CorruptSegmentError(
                    self._log_path, position, offset=None, reason="not a valid batch there"
                )
            yield position, span, window, at
            position += size
            # Small batches: read several headers at a time; large ones: just the next header.
            read_size = HEADER_SIZE if size > _SCAN_WINDOW // 4 else _SCAN_WINDOW

    def translate_offset(self, offset: int) -> tuple[int, BatchHeader] | None:
        """The first batch whose last offset is >= ``offset`` (the one holding it, when any)."""
        located = self.locate_batch(offset)
        if located is None:
            return None
        return located.position, BatchHeader.read(self.read(located.position, HEADER_SIZE))

    def locate_batch(self, offset: int) -> BatchLocation | None:
        """:meth:`translate_offset` without decoding the header: the offset index gives a
        batch to start from, and batch framing is walked from there."""
        start = self.offset_index.lookup(offset).position
        if not start:
            return self._first_batch_reaching(offset, 0)
        try:
            located = self._first_batch_reaching(offset, start)
        except KafkaError:
            located = None
        else:
            if located is None or located.position != start or located.base_offset <= offset:
                return located
        return self._first_batch_reaching(offset, 0)  # the index disagrees with the log

    def _first_batch_reaching(self, offset: int, start: int) -> BatchLocation | None:
        for position, (base_offset, batch_length, _, delta), _, _ in self._walk(start, None):
            if base_offset + delta >= offset:
                return BatchLocation(
                    position, LOG_OVERHEAD + batch_length, base_offset, base_offset + delta
                )
        return None

    def last_batch_end(self, start: int, end: int) -> tuple[int, int] | None:
        """Where the last batch lying wholly in ``[start, end)`` ends, and the offset after it.

        ``start`` is a batch boundary; None when not even its batch fits. The offset index
        gives a boundary close below ``end`` (:meth:`OffsetIndex.batch_start_before`), so only
        the headers of about two index intervals are read, however long the range.
        """
        scan = max(start, self.offset_index.batch_start_before(end))
        try:
            return self._last_batch_end_from(scan, end)
        except KafkaError:
            if scan == start:
                raise
        return self._last_batch_end_from(start, end)  # the index disagrees with the log

    def _last_batch_end_from(self, scan: int, end: int) -> tuple[int, int] | None:
        found: tuple[int, int] | None = None
        for position, (base_offset, batch_length, _, delta), _, _ in self._walk(scan, None):
            batch_end = position + LOG_OVERHEAD + batch_length
            if batch_end > end:
                break
            found = (batch_end, base_offset + delta + 1)
        return found

    def read(self, position: int, length: int) -> bytes:
        """``length`` bytes at ``position`` (copies; see :meth:`region` for sendfile)."""
        parts: list[bytes] = []
        done = 0
        while done < length:
            chunk = os.pread(self._fd, length - done, position + done)
            if not chunk:
                raise _storage_error(f"{self._log_path}: short read at {position + done}")
            parts.append(chunk)
            done += len(chunk)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def region(self, position: int, length: int) -> FileRegion:
        """A :class:`FileRegion` with its own descriptor; the caller closes it."""
        return FileRegion.dup(self._fd, path=self.log_path, position=position, length=length)

    def find_offset_by_timestamp(
        self, timestamp: int, *, starting_offset: int
    ) -> OffsetTimestamp | None:
        """The first record at or above ``starting_offset`` whose timestamp is >= ``timestamp``.

        The time index gives the batch to start from, batch headers (their max timestamp) the
        batch, and the records of that one batch the exact record.
        """
        entry = self.time_index.lookup(timestamp)
        start = self.offset_index.lookup(max(entry.offset, starting_offset)).position
        for position, header in self.batches(start):
            if header.last_offset < starting_offset or header.max_timestamp < timestamp:
                continue
            for record in iter_records(self.read(position, header.size)):
                if record.offset >= starting_offset and record.timestamp >= timestamp:
                    return OffsetTimestamp(record.offset, record.timestamp)
        return None

    def find_max_timestamp(self, *, starting_offset: int) -> OffsetTimestamp | None:
        """The first record at or above ``starting_offset`` with the largest timestamp."""
        if self._size == 0 or starting_offset >= self.next_offset:
            return None
        if starting_offset <= self.base_offset:
            target = self.max_timestamp
            start = self.offset_index.lookup(self.offset_of_max_timestamp).position
            for position, header in self.batches(start):
                if header.max_timestamp == target:
                    found = self._best_record(position, header, starting_offset)
                    if found is not None and found.timestamp == target:
                        return found
                    break
        located = self.locate_batch(starting_offset)
        assert located is not None
        best: tuple[int, int, BatchHeader] | None = None
        for position, header in self.batches(located.position):
            if header.record_count == 0:  # left empty by compaction: no record to point at
                continue
            if header.base_offset >= starting_offset:
                batch_max = header.max_timestamp
            else:  # the batch straddles starting_offset: only its upper records count
                straddling = self._best_record(position, header, starting_offset)
                if straddling is None:
                    continue
                batch_max = straddling.timestamp
            if best is None or batch_max > best[0]:
                best = (batch_max, position, header)
        if best is None:
            return None
        return self._best_record(best[1], best[2], starting_offset)

    def _best_record(
        self, position: int, header: BatchHeader, starting_offset: int
    ) -> OffsetTimestamp | None:
        best: OffsetTimestamp | None = None
        for record in iter_records(self.read(position, header.size)):
            if record.offset >= starting_offset and (best is None or record.timestamp > best[1]):
                best = OffsetTimestamp(record.offset, record.timestamp)
        return best

    # --- recovery and truncation -----------------------------------------------------------

    def recover(self, *, strict: bool = True) -> int:
        """Rescan the file: keep the valid batches, cut at the first invalid or torn one.

        Every batch's CRC is checked (``scan_batches``) and offsets must increase within the
        segment. With ``strict``, damage in the middle (valid batches after the bad one, or
        offsets that do not follow) is not cut but raises
        :class:`~strom.storage.corrupt_segment.CorruptSegmentError`: only a torn tail is cut.
        The indexes are rebuilt from scratch and left appendable (call
        :meth:`on_become_inactive` for a segment that is not the last). The ``.txnindex`` is
        emptied: its entries need the producers' state before the segment, which the partition
        log has (:func:`strom.storage.txn_recovery.rebuild_txn_indexes`). Returns how many
        bytes were cut off.
        """
        self.offset_index.reset()
        self.time_index.reset()
        self.txn_index.reset()
        self._max_timestamp, self._offset_of_max_timestamp = NO_TIMESTAMP, self.base_offset
        self._bytes_since_last_index_entry = 0
        self._size, self._next_offset = 0, self.base_offset
        self._first_batch_known, self._first_batch_timestamp = True, None
        file_size = os.fstat(self._fd).st_size
        valid_end = 0
        if file_size:
            with (
                mmap.mmap(self._fd, file_size, access=mmap.ACCESS_READ) as data,
                memoryview(data) as view,
            ):
                valid_end = self._rescan(view, file_size, strict=strict)
        if valid_end < file_size:
            os.ftruncate(self._fd, valid_end)
        return file_size - valid_end

    def _rescan(self, data: memoryview, file_size: int, *, strict: bool) -> int:
        position = 0
        out_of_order = False
        while position < file_size:
            found, _ = scan_batches(data, position, min(file_size, position + _RECOVERY_CHUNK))
            if not found and file_size - position >= LOG_OVERHEAD:
                # A batch longer than the chunk gets a window of exactly its own length.
                (length,) = _LENGTH.unpack_from(data, position + 8)
                end = position + LOG_OVERHEAD + length
                if position + _RECOVERY_CHUNK < end <= file_size:
                    found, _ = scan_batches(data, position, end)
            if not found:
                break
            accepted: list[BatchSummary] = []
            next_offset = self.next_offset
            for batch_position, header in found:
                if header.base_offset < next_offset or not self.can_hold_offset(header.last_offset):
                    break
                accepted.append(header.summary)
                next_offset = header.next_offset
                position = batch_position + header.size
            if accepted:
                self._account(accepted)
            if len(accepted) < len(found):
                out_of_order = True
                break
        if strict and position < file_size and valid_batch_follows(data, position, file_size):
            reason = (
                "a batch whose offsets do not follow the ones before it"
                if out_of_order
                else "an invalid batch"
            )
            raise CorruptSegmentError(
                self._log_path,
                position,
                offset=self.next_offset,
                reason=f"{reason}, with valid batches after it",
            )
        return position

    def _account(self, batches: Sequence[BatchSummary]) -> None:
        """Index the batches now in the file at ``size`` onwards and move the counters past them.

        Kafka's rule: an offset index entry (the batch's last offset, its position) whenever
        more than ``index.interval.bytes`` were written since the last one, and a time index
        entry with it when the largest timestamp has grown. A full index gets no more entries.
        """
        if self._size == 0:
            self._first_batch_known = True
            self._first_batch_timestamp = batches[0][3]
        position = self._size
        max_timestamp, offset_of_max = self._max_timestamp, self._offset_of_max_timestamp
        assert max_timestamp is not None
        since_last = self._bytes_since_last_index_entry
        interval = self.index_interval_bytes
        offset_index, time_index = self.offset_index, self.time_index
        for base_offset, size, last_offset_delta, batch_max_timestamp in batches:
            last_offset = base_offset + last_offset_delta
            if batch_max_timestamp > max_timestamp:
                max_timestamp, offset_of_max = batch_max_timestamp, last_offset
            if since_last > interval:
                if not offset_index.is_full:
                    offset_index.append(last_offset, position)
                if not time_index.is_full:
                    time_index.maybe_append(max_timestamp, offset_of_max)
                since_last = 0
            position += size
            since_last += size
        self._bytes_since_last_index_entry = since_last
        self._max_timestamp, self._offset_of_max_timestamp = max_timestamp, offset_of_max
        self._size = position
        last_base_offset, _, last_offset_delta, _ = batches[-1]
        self._next_offset = last_base_offset + last_offset_delta + 1

    def truncate_to(self, offset: int, *, now_ms: int) -> int:
        """Remove every batch whose last offset is >= ``offset``; return the bytes removed.

        Batches are never split: a batch holding ``offset`` goes whole, so the segment then
        ends at that batch's base offset.
        """
        located = self.locate_batch(offset)
        if located is None:
            return 0
        position = located.position
        self.offset_index.truncate_to(located.base_offset)
        self.time_index.truncate_to(located.base_offset)
        self.txn_index.truncate_to(located.base_offset)
        removed = self._size - position
        os.ftruncate(self._fd, position)
        self._size = position
        self._next_offset = None
        self._max_timestamp = None
        self._bytes_since_last_index_entry = 0
        if position == 0:
            self._first_batch_known, self._first_batch_timestamp = True, None
            self.created_ms = now_ms
        return removed

    # --- life cycle ------------------------------------------------------------------------

    def make_active(self, *, max_index_size: int) -> None:
        """Make the indexes appendable again (the segment becomes the log's last)."""
        for index in (self.offset_index, self.time_index):
            if not index.writable:
                index.resize(max_index_size)

    def on_become_inactive(self) -> None:
        """Record the true largest timestamp in the time index and trim all three files."""
        if self.time_index.writable:
            timestamp, offset = self.max_timestamp, self.offset_of_max_timestamp
            if self.time_index.entries < self.time_index.max_entries:
                self.time_index.maybe_append(timestamp, offset, skip_full_check=True)
        for index in (self.offset_index, self.time_index):
            if index.writable:
                index.trim()
        if os.fstat(self._fd).st_size > self._size:  # preallocated
            os.ftruncate(self._fd, self._size)

    def dup_log_fd(self) -> int:
        """A descriptor of the ``.log`` file of one's own (close it), to fsync the data from
        another thread while this one goes on appending."""
        return os.dup(self._fd)

    def flush(self) -> None:
        """fsync the log and its indexes."""
        os.fsync(self._fd)
        self.offset_index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def close(self) -> None:
        """Finish the segment (as on roll) and release its descriptor and maps."""
        if self._fd < 0:
            return
        self.on_become_inactive()
        self.offset_index.close()
        self.time_index.close()
        os.close(self._fd)
        self._fd = -1

    def close_handles(self) -> None:
        """Release descriptor and maps without touching the files (before deleting them)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        self.offset_index.release()
        self.time_index.release()

    def change_file_suffixes(self, old: str, new: str) -> None:
        """Rename the segment's files from suffix ``old`` to ``new`` (``.cleaned`` -> ``.swap``)."""
        if old != self._suffix:
            raise ValueError(f"segment {self.base_offset} has suffix {self._suffix!r}, not {old!r}")
        new_log_path = self.directory / segment_file_name(self.base_offset, LOG_SUFFIX, new)
        self._log_path.rename(new_log_path)
        self._log_path = new_log_path
        self.offset_index.rename(
            self.directory / segment_file_name(self.base_offset, INDEX_SUFFIX, new)
        )
        self.time_index.rename(
            self.directory / segment_file_name(self.base_offset, TIME_INDEX_SUFFIX, new)
        )
        self.txn_index.rename(
            self.directory / segment_file_name(self.base_offset, TXN_INDEX_SUFFIX, new)
        )
        self._suffix = new

    def delete(self) -> None:
        """Close, rename the files ``.deleted``, then remove them (Kafka's order)."""
        self.close_handles()
        paths = [
            self.directory / segment_file_name(self.base_offset, kind, self._suffix)
            for kind in FILE_KINDS
        ]
        doomed: list[Path] = []
        for path in paths:
            target = path.with_name(path.name + DELETED_SUFFIX)
            try:
                path.rename(target)
            except FileNotFoundError:
                continue
            doomed.append(target)
        for path in doomed:
            path.unlink(missing_ok=True)

    def __repr__(self) -> str:
        return f"LogSegment({self.log_path.name}, size={self._size})"


def _open_indexes(
    directory: Path, base_offset: int, *, suffix: str, config: LogConfig, writable: bool
) -> tuple[OffsetIndex, TimeIndex]:
    """The offset and time index files of the segment at ``base_offset``."""
    offset_index = OffsetIndex(
        directory / segment_file_name(base_offset, INDEX_SUFFIX, suffix),
        base_offset,
        max_index_size=config.segment_index_bytes,
        writable=writable,
    )
    time_index = TimeIndex(
        directory / segment_file_name(base_offset, TIME_INDEX_SUFFIX, suffix),
        base_offset,
        max_index_size=config.segment_index_bytes,
        writable=writable,
    )
    return offset_index, time_index
