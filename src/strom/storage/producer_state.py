"""The idempotent producer's state in one partition (Kafka's ``ProducerStateManager``).

A sans-I/O core apart from its snapshot files: it never reads the log, it is told about every
batch the log appends, and asked before each append whether the batches may go in.

What it keeps, per producer id (:class:`ProducerStateEntry`): the producer epoch, the metadata
of its last :data:`NUM_BATCHES_TO_RETAIN` batches (first/last sequence, first/last offset, max
timestamp; five because a producer may have five requests in flight), its last timestamp, the
coordinator epoch of its last transaction marker and the first offset of its ongoing transaction
(whose minimum over all producers bounds the last stable offset, for transactions later).

The rules (:meth:`ProducerStateManager.prepare`), for batches from clients, as Kafka has them
since 2.5 (KIP-360):

- A batch without a producer id (< 0) is not looked at.
- A batch whose epoch and sequence range equal one of the producer's cached batches is a
  **duplicate** (a retry whose first attempt was written): nothing is appended and the broker
  answers success with the original batch's offsets (:class:`DuplicateBatch`).
- An epoch below the producer's current epoch: INVALID_PRODUCER_EPOCH (a fenced zombie).
- A higher epoch must start at sequence 0, else OUT_OF_ORDER_SEQUENCE_NUMBER.
- The same epoch must continue at last sequence + 1 (after 2**31 - 1 comes 0), else
  OUT_OF_ORDER_SEQUENCE_NUMBER; a retry older than the cached batches lands here too.
- An unknown producer (never seen, or expired) may start at any sequence.
- Clients may not write control batches, and a batch with a producer id needs a sequence:
  INVALID_RECORD (Kafka's ``LogValidator``). A non-transactional batch while the producer's
  transaction is ongoing: INVALID_TXN_STATE.

Follower appends (``AppendOrigin.REPLICATION``) and log replay are never rejected: the log is
the truth. Coordinator writes (``AppendOrigin.COORDINATOR``) get the epoch check only.

How :class:`~strom.storage.partition_log.PartitionLog` uses it: :meth:`ProducerStateManager.load`
on open; ``prepare``/``commit`` around appends of batches that carry a producer id or are control
batches (a duplicate is answered, not written); a snapshot at every roll (the new segment's base
offset) and on close, keeping the newest few; ``truncate_and_reload`` after a truncation,
``truncate_fully_and_start_at`` after a full one; snapshots below the first segment go with the
segments retention or DeleteRecords delete; ``remove_expired`` from the broker's periodic task.

``batches_from(offset)`` yields the log's batch headers in order, from the batch holding
``offset`` or any earlier one (whole segments are fine: batches ending below ``offset`` are
skipped), e.g. ``LogSegment.batches()`` of every segment whose next offset is above it.

Batches without a producer id never reach the state (the append path stays at two header bytes
per batch for them), so :attr:`~ProducerStateManager.map_end_offset` may lag the log end; the
log moves it up (:meth:`~ProducerStateManager.update_map_end_offset`) before a snapshot or a
truncation. That is exact: everything between has no producer id. ``prepare`` and ``commit``
are a pair: any other change to the producers between them makes ``commit`` refuse the stale
plan (moving the map end is not such a change: a roll may snapshot between them).

Where this differs from Kafka, on purpose:

- Idleness for expiry is measured from the broker's clock at the producer's last append when
  the broker saw it; Kafka uses the batch's max timestamp, so a producer writing old CreateTime
  timestamps loses its state at the next expiry check. Producers known only from the log or a
  snapshot fall back to the batch timestamp, as in Kafka.
- After loading a snapshot and replaying the log, expiry is judged on the replayed state, not
  on the snapshot's entries alone (a producer active after the snapshot keeps its cached batch).
- Within one request, the second batch of a producer must follow the first even for a producer
  seen for the first time (clients send one batch per partition anyway).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Final

from strom.common import ErrorCode, KafkaError
from strom.protocol.batch import NO_TIMESTAMP, BatchHeader
from strom.storage.producer_snapshot import (
    LoadedSnapshot,
    SnapshotEntry,
    delete_snapshots,
    delete_snapshots_above,
    delete_snapshots_below,
    list_snapshot_offsets,
    load_latest_snapshot,
    write_snapshot,
)

__all__ = [
    "DEFAULT_PRODUCER_ID_EXPIRATION_MS",
    "NO_COORDINATOR_EPOCH",
    "NO_PRODUCER_EPOCH",
    "NUM_BATCHES_TO_RETAIN",
    "AppendOrigin",
    "AppendPlan",
    "BatchMetadata",
    "BatchSource",
    "DuplicateBatch",
    "ProducerStateEntry",
    "ProducerStateManager",
    "in_sequence",
    "rebuild",
]

NUM_BATCHES_TO_RETAIN: Final = 5
"""Batches cached per producer for duplicate detection (a producer's max in-flight requests)."""
DEFAULT_PRODUCER_ID_EXPIRATION_MS: Final = 86_400_000
"""``producer.id.expiration.ms``'s default: one day."""
NO_PRODUCER_EPOCH: Final = -1
NO_COORDINATOR_EPOCH: Final = -1
NO_SEQUENCE: Final = -1
_INT32_MAX: Final = 2**31 - 1
_SEQUENCE_MODULUS: Final = 2**31

BatchSource = Callable[[int], Iterable[BatchHeader]]
"""``batches_from(offset)``: the log's batch headers in order, from the batch holding ``offset``
(or earlier; batches ending below it are skipped) to the log end."""


def in_sequence(last_sequence: int, next_sequence: int) -> bool:
    """Whether ``next_sequence`` directly follows ``last_sequence`` (int32 wrap-around to 0)."""
    return next_sequence == last_sequence + 1 or (
        next_sequence == 0 and last_sequence == _INT32_MAX
    )


class AppendOrigin(enum.Enum):
    """Who is appending, which decides how much is checked (Kafka's ``AppendOrigin``)."""

    CLIENT = "client"
    """A producer's request: duplicates, epochs, sequences and client-only rules."""
    COORDINATOR = "coordinator"
    """The group or transaction coordinator (offset commits, markers): epochs only."""
    REPLICATION = "replication"
    """A follower copying the leader: nothing is rejected, the leader has checked it all."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BatchMetadata:
    """What is remembered of one appended batch."""

    first_sequence: int
    last_sequence: int
    first_offset: int
    last_offset: int
    timestamp: int
    """The batch's max timestamp."""

    @classmethod
    def of(cls, header: BatchHeader) -> BatchMetadata:
        """The metadata of a batch as written (its header carries the assigned offsets)."""
        return cls(
            first_sequence=header.base_sequence,
            last_sequence=header.last_sequence,
            first_offset=header.base_offset,
            last_offset=header.last_offset,
            timestamp=header.max_timestamp,
        )

    @property
    def offset_delta(self) -> int:
        return self.last_offset - self.first_offset


@dataclass(frozen=True, slots=True, kw_only=True)
class DuplicateBatch:
    """A retried batch that is already in the log: answer with its original offsets."""

    producer_id: int
    producer_epoch: int
    first_sequence: int
    last_sequence: int
    base_offset: int
    last_offset: int
    max_timestamp: int
    """The original batch's max timestamp (its log append time on LogAppendTime topics)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProducerStateEntry:
    """One producer's state in one partition; immutable, replaced on every change."""

    producer_id: int
    producer_epoch: int = NO_PRODUCER_EPOCH
    batches: tuple[BatchMetadata, ...] = ()
    """The last appended batches of the current epoch, oldest first, at most five."""
    coordinator_epoch: int = NO_COORDINATOR_EPOCH
    last_timestamp: int = NO_TIMESTAMP
    """Max timestamp of the producer's last batch or marker (record time, as Kafka keeps it)."""
    current_txn_first_offset: int | None = None
    last_append_ms: int = NO_TIMESTAMP
    """The broker's clock at the producer's last append seen live; not in snapshots."""

    @property
    def is_empty(self) -> bool:
        """No data batch is remembered (new epoch from a marker, or loaded without one)."""
        return not self.batches

    @property
    def first_sequence(self) -> int:
        return self.batches[0].first_sequence if self.batches else NO_SEQUENCE

    @property
    def last_sequence(self) -> int:
        return self.batches[-1].last_sequence if self.batches else NO_SEQUENCE

    @property
    def first_data_offset(self) -> int:
        return self.batches[0].first_offset if self.batches else -1

    @property
    def last_data_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def find_duplicate(
        self, *, producer_epoch: int, first_sequence: int, last_sequence: int
    ) -> BatchMetadata | None:
        """The cached batch with exactly this epoch and sequence range, if any."""
        if producer_epoch != self.producer_epoch:
            return None
        for batch in self.batches:
            if batch.first_sequence == first_sequence and batch.last_sequence == last_sequence:
                return batch
        return None

    def activity_ms(self) -> int:
        """When the producer was last active: broker time if seen live, else record time."""
        return self.last_append_ms if self.last_append_ms != NO_TIMESTAMP else self.last_timestamp

    def is_expired(self, now_ms: int, expiration_ms: int) -> bool:
        """Idle for ``expiration_ms`` and not in a transaction (Kafka's ``isProducerExpired``)."""
        return (
            self.current_txn_first_offset is None and now_ms - self.activity_ms() >= expiration_ms
        )

    def with_epoch(self, producer_epoch: int) -> ProducerStateEntry:
        """A new epoch forgets the previous epoch's batches."""
        if producer_epoch == self.producer_epoch:
            return self
        return replace(self, producer_epoch=producer_epoch, batches=())

    def with_batch(self, producer_epoch: int, batch: BatchMetadata) -> ProducerStateEntry:
        entry = self.with_epoch(producer_epoch)
        return replace(
            entry,
            batches=(*entry.batches[1 - NUM_BATCHES_TO_RETAIN :], batch),
            last_timestamp=batch.timestamp,
        )

    def to_snapshot_entry(self) -> SnapshotEntry:
        """The snapshot row: only the last batch survives (Kafka's format)."""
        last = self.batches[-1] if self.batches else None
        return SnapshotEntry(
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            last_sequence=last.last_sequence if last else NO_SEQUENCE,
            last_offset=last.last_offset if last else -1,
            offset_delta=last.offset_delta if last else 0,
            timestamp=self.last_timestamp,
            coordinator_epoch=self.coordinator_epoch,
            current_txn_first_offset=(
                -1 if self.current_txn_first_offset is None else self.current_txn_first_offset
            ),
        )

    @classmethod
    def from_snapshot_entry(cls, row: SnapshotEntry) -> ProducerStateEntry:
        batches: tuple[BatchMetadata, ...] = ()
        if row.last_offset >= 0:
            batches = (
                BatchMetadata(
                    first_sequence=(row.last_sequence - row.offset_delta) % _SEQUENCE_MODULUS,
                    last_sequence=row.last_sequence,
                    first_offset=row.last_offset - row.offset_delta,
                    last_offset=row.last_offset,
                    timestamp=row.timestamp,
                ),
            )
        return cls(
            producer_id=row.producer_id,
            producer_epoch=row.producer_epoch,
            batches=batches,
            coordinator_epoch=row.coordinator_epoch,
            last_timestamp=row.timestamp,
            current_txn_first_offset=(
                row.current_txn_first_offset if row.current_txn_first_offset >= 0 else None
            ),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class AppendPlan:
    """The outcome of :meth:`ProducerStateManager.prepare`: append, or answer a duplicate."""

    headers: tuple[BatchHeader, ...]
    origin: AppendOrigin
    duplicate: DuplicateBatch | None
    """Set when the request is a retry already in the log: append nothing, answer with it."""
    state_version: int

    @property
    def should_append(self) -> bool:
        return self.duplicate is None


def _has_producer_id(header: BatchHeader) -> bool:
    # Kafka's RecordBatch.hasProducerId: any id above NO_PRODUCER_ID (-1).
    return header.producer_id >= 0


class ProducerStateManager:
    """Every producer's state in one partition, and the rules its appends obey.

    Build with :meth:`load` (a partition directory: snapshot + log replay), :func:`rebuild`
    (pure), or the constructor (empty, or from entries). Not thread-safe: the partition log's
    owner calls every method.
    """

    def __init__(
        self,
        *,
        name: str = "",
        producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
        map_end_offset: int = 0,
        entries: Iterable[ProducerStateEntry] = (),
    ) -> None:
        if producer_id_expiration_ms < 1:
            raise ValueError(
                f"producer_id_expiration_ms must be positive: {producer_id_expiration_ms}"
            )
        self.name = name
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self._producers: dict[int, ProducerStateEntry] = {}
        self._ongoing: dict[int, int] = {}
        """producer id -> first offset of its ongoing transaction"""
        self._map_end_offset = map_end_offset
        self._last_snapshot_offset: int | None = None
        self._version = 0
        for entry in entries:
            self._install(entry)

    # --- reading -------------------------------------------------------------------------

    @property
    def map_end_offset(self) -> int:
        """The offset after the last batch applied: the state is the log's up to here."""
        return self._map_end_offset

    @property
    def last_snapshot_offset(self) -> int | None:
        """Offset of the last snapshot written or loaded, None if there is none."""
        return self._last_snapshot_offset

    @property
    def producers(self) -> Mapping[int, ProducerStateEntry]:
        """A read-only view of every producer's entry, by producer id."""
        return MappingProxyType(self._producers)

    def entry(self, producer_id: int) -> ProducerStateEntry | None:
        return self._producers.get(producer_id)

    def __len__(self) -> int:
        return len(self._producers)

    def ongoing_transactions(self) -> dict[int, int]:
        """Producer id -> first offset of its ongoing transaction."""
        return dict(self._ongoing)

    def first_undecided_offset(self) -> int | None:
        """The first offset of the oldest ongoing transaction (bounds the last stable offset)."""
        return min(self._ongoing.values(), default=None)

    # --- transaction markers -------------------------------------------------------------

    def check_txn_marker(
        self, *, producer_id: int, producer_epoch: int, coordinator_epoch: int
    ) -> None:
        """Raise if the coordinator may not end ``producer_id``'s transaction here (Kafka's
        ``ProducerAppendInfo.appendEndTxnMarker`` checks): INVALID_PRODUCER_EPOCH for an older
        producer epoch, TRANSACTION_COORDINATOR_FENCED for an older coordinator epoch than
        the producer's last marker's. An unknown producer passes."""
        entry = self._producers.get(producer_id)
        if entry is None:
            return
        if producer_epoch < entry.producer_epoch:
            raise KafkaError(
                ErrorCode.invalid_producer_epoch,
                f"transaction marker for producer {producer_id}{self._where()} has epoch "
                f"{producer_epoch}, older than its current epoch {entry.producer_epoch}",
            )
        if coordinator_epoch < entry.coordinator_epoch:
            raise KafkaError(
                ErrorCode.transaction_coordinator_fenced,
                f"transaction marker for producer {producer_id}{self._where()} has "
                f"coordinator epoch {coordinator_epoch}, older than the last marker's "
                f"{entry.coordinator_epoch}",
            )

    def record_coordinator_epoch(self, producer_id: int, coordinator_epoch: int) -> None:
        """Remember the coordinator epoch of the marker just appended for ``producer_id``
        (the marker's record carries it, not its header)."""
        entry = self._producers.get(producer_id)
        if entry is not None:
            self._install(replace(entry, coordinator_epoch=coordinator_epoch))

    # --- appending -----------------------------------------------------------------------

    def check(
        self, header: BatchHeader, *, origin: AppendOrigin = AppendOrigin.CLIENT
    ) -> DuplicateBatch | None:
        """One batch: raise KafkaError if it may not be appended, or return its duplicate."""
        return self.prepare((header,), origin=origin).duplicate

    def prepare(
        self, headers: Sequence[BatchHeader], *, origin: AppendOrigin = AppendOrigin.CLIENT
    ) -> AppendPlan:
        """Check an append before anything is written; the state does not change.

        Raises KafkaError (INVALID_PRODUCER_EPOCH, OUT_OF_ORDER_SEQUENCE_NUMBER,
        INVALID_TXN_STATE, INVALID_RECORD) for the first batch that may not go in. A client
        batch that duplicates a cached one makes the whole request a duplicate, as in Kafka
        (v3+ produce requests carry one batch per partition).
        """
        pending: dict[int, ProducerStateEntry] = {}
        for header in headers:
            if origin is AppendOrigin.CLIENT:
                self._check_client_batch(header)
            if not _has_producer_id(header):
                continue
            producer_id = header.producer_id
            current = self._producers.get(producer_id)
            if origin is AppendOrigin.CLIENT and current is not None and not header.is_control:
                cached = current.find_duplicate(
                    producer_epoch=header.producer_epoch,
                    first_sequence=header.base_sequence,
                    last_sequence=header.last_sequence,
                )
                if cached is not None:
                    return AppendPlan(
                        headers=tuple(headers),
                        origin=origin,
                        duplicate=DuplicateBatch(
                            producer_id=producer_id,
                            producer_epoch=header.producer_epoch,
                            first_sequence=cached.first_sequence,
                            last_sequence=cached.last_sequence,
                            base_offset=cached.first_offset,
                            last_offset=cached.last_offset,
                            max_timestamp=cached.timestamp,
                        ),
                        state_version=self._version,
                    )
            entry = pending.get(producer_id, current)
            if entry is None:
                entry = ProducerStateEntry(producer_id=producer_id)
            pending[producer_id] = self._advance(entry, header, origin)
        return AppendPlan(
            headers=tuple(headers), origin=origin, duplicate=None, state_version=self._version
        )

    def commit(self, plan: AppendPlan, written: Sequence[BatchHeader], *, now_ms: int) -> None:
        """Apply a prepared append after the log wrote it; ``written`` are the headers as
        written (assigned offsets, LogAppendTime timestamps), one per planned batch."""
        if plan.duplicate is not None:
            raise ValueError("a duplicate batch is answered, not appended: nothing to commit")
        if plan.state_version != self._version:
            raise RuntimeError(
                f"producer state of {self.name or 'the partition'} changed between prepare "
                "and commit; prepare again"
            )
        if len(written) != len(plan.headers):
            raise ValueError(f"planned {len(plan.headers)} batches, {len(written)} written")
        for planned, header in zip(plan.headers, written, strict=True):
            if (
                planned.producer_id,
                planned.producer_epoch,
                planned.base_sequence,
                planned.last_offset_delta,
                planned.is_control,
                planned.is_transactional,
            ) != (
                header.producer_id,
                header.producer_epoch,
                header.base_sequence,
                header.last_offset_delta,
                header.is_control,
                header.is_transactional,
            ):
                raise ValueError(f"written batch {header} is not the planned {planned}")
        for header in written:
            if _has_producer_id(header):
                entry = self._producers.get(header.producer_id) or ProducerStateEntry(
                    producer_id=header.producer_id
                )
                self._install(replace(self._advance(entry, header, None), last_append_ms=now_ms))
        if written:
            self._map_end_offset = max(self._map_end_offset, written[-1].next_offset)
        self._version += 1

    def replay(self, headers: Iterable[BatchHeader], *, end_offset: int | None = None) -> int:
        """Apply batches already in the log, unchecked (recovery); return how many applied.

        Batches ending below :attr:`map_end_offset` are skipped; iteration stops at the first
        batch starting at or after ``end_offset``.
        """
        applied = 0
        for header in headers:
            if header.last_offset < self._map_end_offset:
                continue
            if end_offset is not None and header.base_offset >= end_offset:
                break
            if _has_producer_id(header):
                entry = self._producers.get(header.producer_id) or ProducerStateEntry(
                    producer_id=header.producer_id
                )
                self._install(self._advance(entry, header, None))
            self._map_end_offset = header.next_offset
            applied += 1
        self._version += 1
        return applied

    def update_map_end_offset(self, offset: int) -> None:
        """Say the state covers the log up to ``offset`` (Kafka's ``updateMapEndOffset``);
        prepared plans stay valid."""
        self._map_end_offset = offset

    # --- the rules -----------------------------------------------------------------------

    def _where(self) -> str:
        return f" in {self.name}" if self.name else ""

    def _check_client_batch(self, header: BatchHeader) -> None:
        if header.is_control:
            raise KafkaError(
                ErrorCode.invalid_record,
                f"clients are not allowed to write control records{self._where()}",
            )
        if _has_producer_id(header) and header.base_sequence < 0:
            raise KafkaError(
                ErrorCode.invalid_record,
                f"invalid sequence number {header.base_sequence} in a batch from producer "
                f"{header.producer_id}{self._where()}",
            )

    def _advance(
        self, entry: ProducerStateEntry, header: BatchHeader, origin: AppendOrigin | None
    ) -> ProducerStateEntry:
        """The entry after ``header``; checked as ``origin`` requires (None: not at all)."""
        checked = origin is not None and origin is not AppendOrigin.REPLICATION
        if checked:
            self._check_epoch(entry, header)
        if header.is_control:
            # A transaction marker ends the ongoing transaction (commit or abort alike). Its
            # coordinator epoch is in the marker record, not the header: the partition log
            # checks it (check_txn_marker) and records it (record_coordinator_epoch); a replay
            # from the log keeps the snapshot's.
            return replace(
                entry.with_epoch(header.producer_epoch),
                current_txn_first_offset=None,
                last_timestamp=header.max_timestamp,
            )
        if origin is AppendOrigin.CLIENT:
            self._check_sequence(entry, header)
        if checked and entry.current_txn_first_offset is not None and not header.is_transactional:
            raise KafkaError(
                ErrorCode.invalid_txn_state,
                f"non-transactional batch from producer {header.producer_id}{self._where()} "
                f"while its transaction from offset {entry.current_txn_first_offset} is ongoing",
            )
        updated = entry.with_batch(header.producer_epoch, BatchMetadata.of(header))
        if header.is_transactional and updated.current_txn_first_offset is None:
            updated = replace(updated, current_txn_first_offset=header.base_offset)
        return updated

    def _check_epoch(self, entry: ProducerStateEntry, header: BatchHeader) -> None:
        if header.producer_epoch < entry.producer_epoch:
            raise KafkaError(
                ErrorCode.invalid_producer_epoch,
                f"producer {header.producer_id}{self._where()} sent epoch "
                f"{header.producer_epoch}, older than its current epoch {entry.producer_epoch}",
            )

    def _check_sequence(self, entry: ProducerStateEntry, header: BatchHeader) -> None:
        sequence = header.base_sequence
        if entry.producer_epoch == NO_PRODUCER_EPOCH:
            return  # unknown producer (never seen, or expired): any sequence starts it (KIP-360)
        if header.producer_epoch != entry.producer_epoch:
            if sequence != 0:
                raise KafkaError(
                    ErrorCode.out_of_order_sequence_number,
                    f"producer {header.producer_id}{self._where()} starts its new epoch "
                    f"{header.producer_epoch} at sequence {sequence}; a new epoch starts at 0 "
                    f"(current epoch {entry.producer_epoch})",
                )
            return
        last = entry.last_sequence
        if not in_sequence(last, sequence):
            expected = 0 if last == _INT32_MAX else last + 1
            raise KafkaError(
                ErrorCode.out_of_order_sequence_number,
                f"out-of-order sequence {sequence} from producer {header.producer_id} epoch "
                f"{header.producer_epoch}{self._where()}: expected {expected} (last appended "
                f"sequence {last})",
            )

    def _install(self, entry: ProducerStateEntry) -> None:
        self._producers[entry.producer_id] = entry
        if entry.current_txn_first_offset is None:
            self._ongoing.pop(entry.producer_id, None)
        else:
            self._ongoing[entry.producer_id] = entry.current_txn_first_offset

    def _clear(self) -> None:
        self._producers.clear()
        self._ongoing.clear()
        self._version += 1

    # --- expiry and truncation -----------------------------------------------------------

    def remove_expired(self, now_ms: int, *, expiration_ms: int | None = None) -> list[int]:
        """Forget producers idle for ``expiration_ms`` (default ``producer_id_expiration_ms``)
        and not in a transaction; return their ids. Their next batch is accepted at any
        sequence (KIP-360)."""
        limit = self.producer_id_expiration_ms if expiration_ms is None else expiration_ms
        expired = [
            producer_id
            for producer_id, entry in self._producers.items()
            if entry.is_expired(now_ms, limit)
        ]
        for producer_id in expired:
            del self._producers[producer_id]
        if expired:
            self._version += 1
        return expired

    def truncate_and_reload(
        self,
        directory: Path,
        *,
        log_start_offset: int,
        log_end_offset: int,
        batches_from: BatchSource,
        now_ms: int,
    ) -> None:
        """After the log was truncated to ``log_end_offset``: rebuild from the latest snapshot
        at or below it plus the log's batches after the snapshot; snapshots above the log end
        or below the log start are deleted. Nothing is reloaded if the state is already at
        ``log_end_offset``."""
        delete_snapshots_above(directory, log_end_offset)
        delete_snapshots_below(directory, log_start_offset)
        if log_end_offset == self._map_end_offset:
            if (
                self._last_snapshot_offset is not None
                and not log_start_offset <= self._last_snapshot_offset <= log_end_offset
            ):
                self._last_snapshot_offset = None
            return
        snapshot = load_latest_snapshot(directory, up_to_offset=log_end_offset)
        self._reset_from(snapshot, log_start_offset=log_start_offset)
        self.replay(batches_from(self._map_end_offset), end_offset=log_end_offset)
        self._map_end_offset = log_end_offset
        self.remove_expired(now_ms)

    def truncate_fully_and_start_at(self, directory: Path, offset: int) -> None:
        """The log was emptied and starts at ``offset``: forget everything, snapshots too."""
        self._clear()
        delete_snapshots(directory, list_snapshot_offsets(directory))
        self._last_snapshot_offset = None
        self._map_end_offset = offset

    def _reset_from(self, snapshot: LoadedSnapshot | None, *, log_start_offset: int) -> None:
        self._clear()
        if snapshot is None:
            self._map_end_offset = log_start_offset
            self._last_snapshot_offset = None
            return
        for row in snapshot.entries:
            self._install(ProducerStateEntry.from_snapshot_entry(row))
        self._map_end_offset = snapshot.offset
        self._last_snapshot_offset = snapshot.offset

    # --- snapshots -----------------------------------------------------------------------

    def snapshot_entries(self) -> list[SnapshotEntry]:
        """The state as snapshot rows, by producer id."""
        return [self._producers[pid].to_snapshot_entry() for pid in sorted(self._producers)]

    def take_snapshot(self, directory: Path, *, offset: int | None = None) -> Path | None:
        """Write ``<map end offset>.snapshot`` unless the last snapshot is already there.

        ``offset``, when given, must be the map end offset (the log end offset): a snapshot
        must hold exactly the state of the batches below its offset.
        """
        if offset is not None and offset != self._map_end_offset:
            raise ValueError(
                f"producer state covers the log up to {self._map_end_offset}, cannot snapshot "
                f"it at {offset}"
            )
        if (
            self._last_snapshot_offset is not None
            and self._map_end_offset <= self._last_snapshot_offset
        ):
            return None
        path = write_snapshot(directory, self._map_end_offset, self.snapshot_entries())
        self._last_snapshot_offset = self._map_end_offset
        return path

    @classmethod
    def load(
        cls,
        directory: Path,
        *,
        log_start_offset: int,
        log_end_offset: int,
        batches_from: BatchSource,
        now_ms: int,
        had_clean_shutdown: bool = False,
        producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
        name: str | None = None,
    ) -> ProducerStateManager:
        """A partition's state at start-up: the latest good snapshot at or below the log end
        (corrupt ones are deleted and skipped), then the log's batches after it; expired
        producers are dropped. Snapshots above the log end or below the log start are
        deleted: they describe batches that are gone.

        A clean shutdown always leaves a snapshot, so a log shut down cleanly without any
        was written before producer state existed (an upgrade): as Kafka, it is not scanned;
        the state starts empty at the log end, snapshotted there for the next start."""
        manager = cls(
            name=directory.name if name is None else name,
            producer_id_expiration_ms=producer_id_expiration_ms,
            map_end_offset=log_start_offset,
        )
        if (
            had_clean_shutdown
            and log_end_offset > log_start_offset
            and not list_snapshot_offsets(directory)
        ):
            manager._map_end_offset = log_end_offset
            manager.take_snapshot(directory)
            return manager
        delete_snapshots_above(directory, log_end_offset)
        delete_snapshots_below(directory, log_start_offset)
        snapshot = load_latest_snapshot(directory, up_to_offset=log_end_offset)
        manager._reset_from(snapshot, log_start_offset=log_start_offset)
        if manager._map_end_offset < log_end_offset:
            manager.replay(batches_from(manager._map_end_offset), end_offset=log_end_offset)
        manager._map_end_offset = log_end_offset
        manager.remove_expired(now_ms)
        return manager


def rebuild(
    snapshot: LoadedSnapshot | None,
    headers: Iterable[BatchHeader],
    *,
    log_start_offset: int = 0,
    end_offset: int | None = None,
    producer_id_expiration_ms: int = DEFAULT_PRODUCER_ID_EXPIRATION_MS,
    name: str = "",
) -> ProducerStateManager:
    """Pure recovery: the state of ``snapshot`` (or empty at ``log_start_offset``) with the
    log's batch headers after it replayed, up to ``end_offset``. Nothing expires here; call
    :meth:`ProducerStateManager.remove_expired` with the current time if wanted."""
    manager = ProducerStateManager(name=name, producer_id_expiration_ms=producer_id_expiration_ms)
    manager._reset_from(snapshot, log_start_offset=log_start_offset)
    manager.replay(headers, end_offset=end_offset)
    if end_offset is not None:
        manager._map_end_offset = max(manager._map_end_offset, end_offset)
    return manager
