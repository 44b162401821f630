"""Opening a partition directory: leftovers, segments, index checks, crash recovery.

The steps, in order (Kafka's ``LogLoader``):

1. **Leftovers.** ``*.cleaned`` files are removed: a cleaner wrote them and crashed before
   renaming them ``.swap``, and the segments they were to replace are all still there.
   ``<base>.log.swap`` files are completed (below); index ``.swap`` files are removed and rebuilt.
   ``*.deleted`` files are removed *after* the swaps are done. Index files without a ``.log``
   are removed.
2. **Swaps.** The cleaner renames a replacement segment ``.cleaned`` -> ``.swap`` only after it
   is complete and fsynced, and only then deletes the segments it replaces, then drops the
   suffix. So a ``.swap`` found at startup is whole and holds everything the segments it
   replaces held that compaction keeps. It replaces every segment whose base offset is in
   ``[swap base, swap next offset)`` (at least the one at its own base offset); segments
   beyond that range were not part of the cleaning, or held only records compaction removed,
   and are kept. **No-loss rule:** a ``.swap`` that fails its rescan (torn, which only a broken
   disk explains) is dropped when the segment at its base offset is still there, since the
   originals are then intact; otherwise its valid prefix is the best copy left and is used.
3. **Segments** ``<base>.log`` are opened; their indexes must pass a sanity check (size a
   multiple of the entry size, entries increasing, positions inside the log); a missing or
   failing index (a ``.txnindex`` is checked too; a missing one just means no aborted
   transaction) makes the segment be recovered, which rebuilds both indexes.
4. **Recovery.** Without the clean-shutdown marker, every segment from the one holding the
   recovery point on is rescanned (CRC of every batch): the first invalid or torn batch and
   everything after it in the segment are cut, and all later segments are deleted. After a
   clean shutdown this is skipped.
5. The last segment becomes the active one (indexes preallocated again). The log start offset
   is ``max(checkpointed log start, first segment's base offset)``; the recovery point becomes
   the log end offset after a clean shutdown, else ``min(checkpointed, log end offset)``:
   recovered segments are not flushed, so a crash now recovers them again.

6. **State** (:func:`load_state`): the producer state (the latest snapshot at or below the log
   end, the batches after it replayed: none after a clean shutdown, which left one at the end;
   a clean log without any snapshot predates them and is not scanned), the ``.txnindex`` of
   the recovered segments (recovery empties it; :mod:`strom.storage.txn_recovery` rebuilds it
   with the producers' state) and the leader epochs (``leader-epoch-checkpoint``).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from strom.protocol.batch import BatchHeader
from strom.storage._files import fsync_directory
from strom.storage.leader_epoch_cache import LeaderEpochFile
from strom.storage.log_config import LogConfig
from strom.storage.producer_state import ProducerStateManager
from strom.storage.segment import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    LogSegment,
    parse_segment_file_name,
)
from strom.storage.txn_recovery import rebuild_txn_indexes

__all__ = ["LoadedLog", "LoadedState", "batches_from", "load_log", "load_state"]


@dataclass(slots=True, kw_only=True)
class LoadedLog:
    """The state a partition log starts from."""

    segments: list[LogSegment]
    log_start_offset: int
    recovery_point: int
    log_end_offset: int
    recovered_segments: int
    """Segments rescanned because of an unclean shutdown or a bad index."""
    recovered: list[LogSegment]
    """The segments of ``segments`` that were rescanned (their ``.txnindex`` is empty)."""
    truncated_bytes: int
    """Bytes cut off torn or invalid tails."""


@dataclass(slots=True)
class _Listing:
    logs: set[int]
    swaps: set[int]
    deleted: list[Path]


def _list_files(directory: Path) -> _Listing:
    listing = _Listing(logs=set(), swaps=set(), deleted=[])
    index_bases: dict[int, list[Path]] = {}
    for path in directory.iterdir():
        parsed = parse_segment_file_name(path.name)
        if parsed is None:
            continue
        base_offset, kind, suffix = parsed
        if suffix == CLEANED_SUFFIX:
            path.unlink()
        elif suffix == SWAP_SUFFIX:
            if kind == LOG_SUFFIX:
                listing.swaps.add(base_offset)
            else:
                path.unlink()
        elif suffix.endswith(DELETED_SUFFIX):
            listing.deleted.append(path)
        elif suffix == "":
            if kind == LOG_SUFFIX:
                listing.logs.add(base_offset)
            else:
                index_bases.setdefault(base_offset, []).append(path)
    for base_offset, paths in index_bases.items():
        if base_offset not in listing.logs:
            for path in paths:
                path.unlink()
    return listing


def _complete_swap(
    directory: Path,
    base_offset: int,
    segments: dict[int, LogSegment],
    *,
    config: LogConfig,
    now_ms: int,
) -> LogSegment | None:
    """Replace the segments a ``.swap`` covers with it; the swap (recovered), or None when
    it was dropped."""
    swap = LogSegment.open(directory, base_offset, config=config, now_ms=now_ms, suffix=SWAP_SUFFIX)
    truncated = swap.recover(strict=False)  # the no-loss rule decides about a bad swap
    if truncated and base_offset in segments:
        swap.delete()
        return None
    end = max(swap.next_offset, base_offset + 1)
    for old in sorted(b for b in segments if base_offset <= b < end):
        segments.pop(old).delete()
    swap.on_become_inactive()
    swap.change_file_suffixes(SWAP_SUFFIX, "")
    segments[base_offset] = swap
    return swap


def load_log(
    directory: Path,
    *,
    config: LogConfig,
    now_ms: int,
    recovery_point: int,
    log_start_offset: int,
    had_clean_shutdown: bool,
) -> LoadedLog:
    """Open (creating if needed) the partition directory and bring it to a consistent state."""
    directory.mkdir(parents=True, exist_ok=True)
    listing = _list_files(directory)
    by_base: dict[int, LogSegment] = {
        base: LogSegment.open(directory, base, config=config, now_ms=now_ms)
        for base in sorted(listing.logs)
    }
    rescanned: list[LogSegment] = []
    for base in sorted(listing.swaps):
        swap = _complete_swap(directory, base, by_base, config=config, now_ms=now_ms)
        if swap is not None:
            rescanned.append(swap)
    for path in listing.deleted:
        path.unlink(missing_ok=True)
    changed = bool(listing.swaps or listing.deleted)

    segments = [by_base[base] for base in sorted(by_base)]
    bases = [segment.base_offset for segment in segments]
    first_unflushed = len(segments)
    if not had_clean_shutdown and segments:
        first_unflushed = max(bisect.bisect_right(bases, recovery_point) - 1, 0)

    recovered = truncated = 0
    for segment in segments[:first_unflushed]:
        if segment.index_problem() is not None:
            truncated += segment.recover()
            recovered += 1
            rescanned.append(segment)
            segment.on_become_inactive()
    for i in range(first_unflushed, len(segments)):
        segment = segments[i]
        cut = segment.recover()
        recovered += 1
        rescanned.append(segment)
        if i < len(segments) - 1:
            segment.on_become_inactive()
        if cut:
            truncated += cut
            for later in reversed(segments[i + 1 :]):
                later.delete()
            del segments[i + 1 :]
            break
    changed = changed or recovered > 0

    if not segments:
        segments.append(
            LogSegment.create(directory, log_start_offset, config=config, now_ms=now_ms)
        )
        changed = True
    log_end_offset = segments[-1].next_offset
    start = max(log_start_offset, segments[0].base_offset)
    if start > log_end_offset:  # everything left is below the log start: start afresh there
        for segment in reversed(segments):
            segment.delete()
        segments = [LogSegment.create(directory, start, config=config, now_ms=now_ms)]
        log_end_offset = start
        changed = True
    segments[-1].make_active(max_index_size=config.segment_index_bytes)
    if changed:
        fsync_directory(directory)
    return LoadedLog(
        segments=segments,
        log_start_offset=start,
        recovery_point=log_end_offset
        if had_clean_shutdown
        else max(min(recovery_point, log_end_offset), 0),
        log_end_offset=log_end_offset,
        recovered_segments=recovered,
        recovered=sorted(
            (s for s in segments if any(s is r for r in rescanned)), key=lambda s: s.base_offset
        ),
        truncated_bytes=truncated,
    )


@dataclass(slots=True, kw_only=True)
class LoadedState:
    """What a partition log keeps beside its segments, loaded to agree with them."""

    producer_state: ProducerStateManager
    leader_epochs: LeaderEpochFile


def load_state(
    directory: Path, loaded: LoadedLog, *, now_ms: int, had_clean_shutdown: bool
) -> LoadedState:
    """Step 6 of the module doc: producer state, recovered ``.txnindex`` files, leader epochs."""
    state = ProducerStateManager.load(
        directory,
        log_start_offset=loaded.log_start_offset,
        log_end_offset=loaded.log_end_offset,
        batches_from=lambda offset: batches_from(loaded.segments, offset),
        now_ms=now_ms,
        had_clean_shutdown=had_clean_shutdown,
    )
    rebuild_txn_indexes(
        directory, loaded.segments, loaded.recovered, log_start_offset=loaded.log_start_offset
    )
    epochs = LeaderEpochFile.load(
        directory,
        log_start_offset=loaded.log_start_offset,
        log_end_offset=loaded.log_end_offset,
        batch_epochs=lambda: (
            (header.base_offset, header.partition_leader_epoch)
            for segment in loaded.segments
            for _, header in segment.batches()
        ),
    )
    return LoadedState(producer_state=state, leader_epochs=epochs)


def batches_from(segments: Sequence[LogSegment], offset: int) -> Iterator[BatchHeader]:
    """The batch headers of the segments holding ``offset`` and after (the producer state's
    ``batches_from``: it skips those ending below ``offset``)."""
    first = max(bisect.bisect_right([s.base_offset for s in segments], offset) - 1, 0)
    for segment in segments[first:]:
        for _, header in segment.batches():
            yield header
