"""The transaction coordinator (Kafka's ``TransactionCoordinator`` and the state-keeping half of
its ``TransactionStateManager``), without I/O.

Requests come in as plain arguments with the time (``now_ms``) and a ``reply`` callback. A
change of a transactional id is written to its ``__transaction_state`` partition through the
:class:`TransactionWriter` and applied (and answered) only once written; meanwhile the id
answers CONCURRENT_TRANSACTIONS. Ending a transaction writes PrepareCommit/PrepareAbort,
answers the producer, asks the writer for a COMMIT/ABORT marker in every partition of the
transaction, then writes CompleteCommit/CompleteAbort. Timers are deadlines: the shell calls
:meth:`TransactionCoordinator.poll` at :meth:`TransactionCoordinator.next_deadline`. See
``NOTES.md`` beside this module for the invariants.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from strom.common import ErrorCode, TopicPartition
from strom.coordinator.partitions import CoordinatorPartitions
from strom.coordinator.txn.metadata import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TransactionMetadata,
    is_epoch_exhausted,
)
from strom.coordinator.txn.records import (
    TransactionLogKey,
    TransactionLogRecord,
    TransactionLogValue,
)
from strom.coordinator.txn.state import TransactionState, check_transition

__all__ = [
    "InitProducerIdResult",
    "TransactionCoordinator",
    "TransactionWriter",
    "TxnSettings",
]

log = logging.getLogger(__name__)

S = TransactionState
_PREPARED = {S.PREPARE_COMMIT: S.COMPLETE_COMMIT, S.PREPARE_ABORT: S.COMPLETE_ABORT}
_IDLE = frozenset({S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT})


class TransactionWriter(Protocol):
    """The shell's side: appends to ``__transaction_state`` and writes transaction markers."""

    def append(
        self,
        partition: int,
        records: Sequence[TransactionLogRecord],
        done: Callable[[ErrorCode], None],
    ) -> None:
        """Append to ``__transaction_state`` ``partition``; ``done`` once committed, or why not."""

    def write_markers(
        self,
        *,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        partitions: Collection[TopicPartition],
        done: Callable[[], None],
    ) -> None:
        """Write a COMMIT or ABORT marker in every partition; ``done`` when every one is
        written or given up on (a deleted topic, a fenced coordinator)."""


@dataclass(frozen=True, slots=True)
class TxnSettings:
    """Kafka's ``transaction*`` broker settings the coordinator uses."""

    max_timeout_ms: int = 900_000
    id_expiration_ms: int = 604_800_000
    abort_check_interval_ms: int = 10_000
    expiration_check_interval_ms: int = 3_600_000


FINISHING_HOLD_MS: Final = 100
"""How long AddPartitionsToTxn/AddOffsetsToTxn wait for the id's prepared transaction to
finish before answering CONCURRENT_TRANSACTIONS (:meth:`TransactionCoordinator.add_partitions`)."""


@dataclass(frozen=True, slots=True)
class _Held:
    """A request waiting for its id's prepared transaction: ``retry(hold)`` serves it again."""

    deadline_ms: int
    retry: Callable[[bool], None]


@dataclass(frozen=True, slots=True)
class InitProducerIdResult:
    error: ErrorCode
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH


class TransactionCoordinator:
    """Every transactional id of the ``__transaction_state`` partitions this broker leads."""

    def __init__(self, *, settings: TxnSettings, writer: TransactionWriter) -> None:
        self.settings = settings
        self._writer = writer
        self.transactions: dict[str, TransactionMetadata] = {}
        self._partitions = CoordinatorPartitions("__transaction_state")
        self._coordinator_epochs: dict[int, int] = {}
        self._completing: set[str] = set()
        """Transactional ids whose markers are being written."""
        self._held: dict[str, list[_Held]] = {}
        """AddPartitionsToTxn/AddOffsetsToTxn waiting for the id's prepared transaction to
        finish (:meth:`add_partitions`)."""
        self._next_abort_check: int | None = None
        self._next_expiry_check: int | None = None

    # --- partitions and loading -------------------------------------------------------------

    @property
    def partition_count(self) -> int | None:
        """Partitions of ``__transaction_state`` (None before the topic exists)."""
        return self._partitions.count

    def begin_loading(self, partitions: int, owned: Collection[int] | None = None) -> None:
        """The topic exists with ``partitions`` partitions; those this broker leads (``owned``,
        all when None) are now loading."""
        self._partitions.begin_loading(partitions, owned)

    @property
    def owned_partitions(self) -> frozenset[int]:
        """The partitions of ``__transaction_state`` this broker leads, so coordinates."""
        return self._partitions.owned

    def begin_loading_partition(self, partition: int) -> None:
        """This broker became the leader of ``partition``: its records are replayed next."""
        self._partitions.load(partition)

    def unload_partition(self, partition: int) -> None:
        """Another broker leads ``partition`` now: its transactional ids go (the new
        coordinator loads them and completes what was prepared)."""
        self._partitions.unload(partition)
        self._coordinator_epochs.pop(partition, None)
        for transactional_id in [t for t in self.transactions if self.partition_of(t) == partition]:
            del self.transactions[transactional_id]
            self._completing.discard(transactional_id)
            self._release(transactional_id)  # answered NOT_COORDINATOR now

    def replay(self, record: TransactionLogRecord) -> None:
        """Apply one record of a loading partition (the last record of an id wins)."""
        transactional_id = record.key.transactional_id
        if record.value is None:
            self.transactions.pop(transactional_id, None)
        else:
            self.transactions[transactional_id] = TransactionMetadata.from_value(
                transactional_id, record.value
            )

    def finish_loading(self, partition: int, *, coordinator_epoch: int, now_ms: int) -> None:
        """``partition`` is replayed: its ids serve requests, and a transaction that was left
        prepared gets its markers and its Complete record now."""
        self._partitions.finish_loading(partition)
        self._coordinator_epochs[partition] = coordinator_epoch
        for metadata in list(self.transactions.values()):
            in_partition = self.partition_of(metadata.transactional_id) == partition
            if in_partition and metadata.state in _PREPARED:
                self._send_markers(metadata, now_ms)
        if self._next_abort_check is None:
            self._next_abort_check = now_ms + self.settings.abort_check_interval_ms
            self._next_expiry_check = now_ms + self.settings.expiration_check_interval_ms

    def partition_of(self, transactional_id: str) -> int:
        return self._partitions.partition_of(transactional_id)

    def txn_error(self, transactional_id: str) -> ErrorCode:
        """NOT_COORDINATOR before the topic exists, COORDINATOR_LOAD_IN_PROGRESS while the
        id's partition loads, NONE when requests for the id may be served."""
        return self._partitions.error(transactional_id)

    # --- InitProducerId ---------------------------------------------------------------------

    def init_producer_id(
        self,
        transactional_id: str,
        *,
        timeout_ms: int,
        producer_id: int,
        producer_epoch: int,
        new_producer_id: int | None,
        now_ms: int,
        reply: Callable[[InitProducerIdResult], None],
    ) -> None:
        """A producer id and epoch for ``transactional_id``: a bumped epoch for a known id (a
        new producer id once the epoch is exhausted), ``new_producer_id`` for a new one. An
        Ongoing transaction is aborted first; the producer gets CONCURRENT_TRANSACTIONS and
        retries. ``producer_id``/``producer_epoch`` (v3+, -1 when absent) must be the current
        ones, or those of a lost previous answer (KIP-360); otherwise PRODUCER_FENCED.
        ``new_producer_id`` may be None unless :meth:`needs_producer_id` says otherwise."""
        if not 0 < timeout_ms <= self.settings.max_timeout_ms:
            reply(InitProducerIdResult(ErrorCode.invalid_transaction_timeout))
            return
        error = self.txn_error(transactional_id)
        if error is not ErrorCode.none:
            reply(InitProducerIdResult(error))
            return
        if new_producer_id is None and self.needs_producer_id(transactional_id):
            raise ValueError(f"InitProducerId of {transactional_id!r} needs a new producer id")
        metadata = self.transactions.get(transactional_id)
        if metadata is None:
            assert new_producer_id is not None
            metadata = self.transactions[transactional_id] = TransactionMetadata(
                transactional_id=transactional_id,
                producer_id=new_producer_id,
                producer_epoch=NO_PRODUCER_EPOCH,
                timeout_ms=timeout_ms,
                state=S.EMPTY,
                last_update_timestamp_ms=now_ms,
            )
        if metadata.pending is not None or transactional_id in self._completing:
            reply(InitProducerIdResult(ErrorCode.concurrent_transactions))
            return
        expected = producer_id != NO_PRODUCER_ID or producer_epoch != NO_PRODUCER_EPOCH
        retry = expected and _is_retry(metadata, producer_id, producer_epoch)
        if expected and not retry and not _is_current(metadata, producer_id, producer_epoch):
            reply(InitProducerIdResult(ErrorCode.producer_fenced))
            return
        if metadata.state is S.ONGOING:
            self._fence_and_abort(
                metadata,
                now_ms,
                lambda code: reply(
                    InitProducerIdResult(
                        ErrorCode.concurrent_transactions if code is ErrorCode.none else code
                    )
                ),
            )
            return
        if metadata.state not in _IDLE:
            reply(InitProducerIdResult(ErrorCode.concurrent_transactions))
            return
        if retry:
            reply(
                InitProducerIdResult(ErrorCode.none, metadata.producer_id, metadata.producer_epoch)
            )
            return
        changes: dict[str, object] = {
            "timeout_ms": timeout_ms,
            "partitions": frozenset(),
            "start_timestamp_ms": -1,
            "last_update_timestamp_ms": now_ms,
        }
        # Only a bump the producer asked for (KIP-360) remembers the epoch it had, for the retry
        # of a lost answer; a new instance (no expected epoch) forgets it, so that the instance
        # it replaced cannot pass for a retry (Kafka's prepareIncrementProducerEpoch).
        last_epoch = metadata.producer_epoch if expected else NO_PRODUCER_EPOCH
        if is_epoch_exhausted(metadata.producer_epoch):
            assert new_producer_id is not None
            changes.update(
                producer_id=new_producer_id,
                producer_epoch=0,
                previous_producer_id=metadata.producer_id,
                last_producer_epoch=last_epoch,
            )
        else:
            changes.update(
                producer_epoch=metadata.producer_epoch + 1, last_producer_epoch=last_epoch
            )
        target = metadata.prepare(S.EMPTY, **changes)

        def written(code: ErrorCode) -> None:
            if code is ErrorCode.none:
                reply(InitProducerIdResult(code, target.producer_id, target.producer_epoch))
            else:
                reply(InitProducerIdResult(code))

        self._write(metadata, target, written)

    def needs_producer_id(self, transactional_id: str) -> bool:
        """Whether InitProducerId of ``transactional_id`` would now hand out a new producer id
        (a new id, or an exhausted epoch)."""
        metadata = self.transactions.get(transactional_id)
        return metadata is None or is_epoch_exhausted(metadata.producer_epoch)

    # --- AddPartitionsToTxn, AddOffsetsToTxn --------------------------------------------------

    def add_partitions(
        self,
        transactional_id: str,
        *,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
        now_ms: int,
        reply: Callable[[ErrorCode], None],
        hold: bool = True,
    ) -> None:
        """Add partitions to the transaction (opening it: Ongoing). AddOffsetsToTxn adds the
        group's ``__consumer_offsets`` partition the same way.

        While the id's previous transaction is prepared (its markers and Complete record being
        written, which EndTxn does not wait for), the request is held until that Complete
        record is written, at most :data:`FINISHING_HOLD_MS` (``hold``), then served as of its
        arrival: a producer that starts its next transaction at once is answered as soon as it
        may go on, where CONCURRENT_TRANSACTIONS would leave it to retry after its backoff
        (librdkafka's is 20 ms, more than the markers take on a cluster)."""
        added = frozenset(partitions)
        error, metadata = self._validate(transactional_id, producer_id, producer_epoch)
        current = self.transactions.get(transactional_id)
        if (
            hold
            and error in (ErrorCode.none, ErrorCode.concurrent_transactions)
            and current is not None
            and current.state in _PREPARED
        ):
            self._held.setdefault(transactional_id, []).append(
                _Held(
                    now_ms + FINISHING_HOLD_MS,
                    lambda again: self.add_partitions(
                        transactional_id,
                        producer_id=producer_id,
                        producer_epoch=producer_epoch,
                        partitions=added,
                        now_ms=now_ms,
                        reply=reply,
                        hold=again,
                    ),
                )
            )
            return
        if error is not ErrorCode.none or metadata is None:
            reply(error)
            return
        if metadata.state in _PREPARED:
            reply(ErrorCode.concurrent_transactions)
            return
        if metadata.state is S.ONGOING and added <= metadata.partitions:
            reply(ErrorCode.none)
            return
        if metadata.state is not S.ONGOING and metadata.state not in _IDLE:
            reply(ErrorCode.invalid_txn_state)
            return
        start = metadata.start_timestamp_ms if metadata.state is S.ONGOING else now_ms
        target = metadata.prepare(
            S.ONGOING,
            partitions=metadata.partitions | added,
            start_timestamp_ms=start,
            last_update_timestamp_ms=now_ms,
        )
        self._write(metadata, target, reply)

    def verify_partitions(
        self,
        transactional_id: str,
        *,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> dict[TopicPartition, ErrorCode]:
        """AddPartitionsToTxn v4+ ``verify_only`` and produce verification (KIP-890): NONE for
        each partition in the producer's Ongoing transaction, INVALID_TXN_STATE otherwise;
        CONCURRENT_TRANSACTIONS while it is PrepareCommit/PrepareAbort (retriable, as Kafka)."""
        wanted = list(partitions)
        error, metadata = self._validate(
            transactional_id, producer_id, producer_epoch, pending_ok=True
        )
        if error is ErrorCode.none and metadata is not None and metadata.state in _PREPARED:
            error = ErrorCode.concurrent_transactions  # its markers are being written
        if error is not ErrorCode.none or metadata is None:
            return dict.fromkeys(wanted, error)
        return {
            tp: ErrorCode.none
            if metadata.state is S.ONGOING and tp in metadata.partitions
            else ErrorCode.invalid_txn_state
            for tp in wanted
        }

    # --- EndTxn -----------------------------------------------------------------------------

    def end_txn(
        self,
        transactional_id: str,
        *,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        now_ms: int,
        reply: Callable[[ErrorCode], None],
    ) -> None:
        """Commit or abort the Ongoing transaction: answered once PrepareCommit/PrepareAbort is
        written; markers and the Complete record follow. A retry of a finished end is NONE."""
        error, metadata = self._validate(transactional_id, producer_id, producer_epoch)
        if error is not ErrorCode.none or metadata is None:
            reply(error)
            return
        state = metadata.state
        wanted = S.PREPARE_COMMIT if commit else S.PREPARE_ABORT
        done = S.COMPLETE_COMMIT if commit else S.COMPLETE_ABORT
        if state is S.ONGOING:
            target = metadata.prepare(wanted, last_update_timestamp_ms=now_ms)

            def written(code: ErrorCode) -> None:
                reply(code)
                if code is ErrorCode.none:
                    self._send_markers(metadata, now_ms)

            self._write(metadata, target, written)
        elif state is done:
            reply(ErrorCode.none)
        elif state is wanted:
            reply(ErrorCode.concurrent_transactions)
        else:
            reply(ErrorCode.invalid_txn_state)

    # --- DescribeTransactions, ListTransactions ---------------------------------------------

    def describe(self, transactional_id: str) -> tuple[ErrorCode, TransactionMetadata | None]:
        error = self.txn_error(transactional_id)
        if error is not ErrorCode.none:
            return error, None
        metadata = self.transactions.get(transactional_id)
        if metadata is None or metadata.state is S.DEAD:
            return ErrorCode.transactional_id_not_found, None
        return ErrorCode.none, metadata

    def list_transactions(
        self,
        *,
        states: Collection[str],
        producer_ids: Collection[int],
        duration_ms: int,
        now_ms: int,
    ) -> tuple[ErrorCode, list[str], list[TransactionMetadata]]:
        """(error, unknown state filters, matching transactions); empty filters match all;
        ``duration_ms`` >= 0: only transactions running at least that long."""
        if self._partitions.loading:
            return ErrorCode.coordinator_load_in_progress, [], []
        unknown = [name for name in states if TransactionState.parse(name) is None]
        wanted = {state for name in states if (state := TransactionState.parse(name))}
        found = [
            metadata
            for metadata in self.transactions.values()
            if metadata.state is not S.DEAD
            and (not states or metadata.state in wanted)
            and (not producer_ids or metadata.producer_id in producer_ids)
            and (duration_ms < 0 or now_ms - metadata.start_timestamp_ms >= duration_ms)
        ]
        return ErrorCode.none, unknown, sorted(found, key=lambda m: m.transactional_id)

    # --- timers -----------------------------------------------------------------------------

    def next_deadline(self) -> int | None:
        checks = [t for t in (self._next_abort_check, self._next_expiry_check) if t is not None]
        checks.extend(held.deadline_ms for waiting in self._held.values() for held in waiting)
        return min(checks, default=None)

    def poll(self, now_ms: int) -> None:
        """Answer the held requests whose wait ran out, run the periodic checks that are due."""
        for transactional_id, waiting in list(self._held.items()):
            if any(held.deadline_ms <= now_ms for held in waiting):
                self._release(transactional_id, lambda held: held.deadline_ms <= now_ms)
        if self._next_abort_check is not None and now_ms >= self._next_abort_check:
            self._next_abort_check = now_ms + self.settings.abort_check_interval_ms
            self.abort_timed_out(now_ms)
        if self._next_expiry_check is not None and now_ms >= self._next_expiry_check:
            self._next_expiry_check = now_ms + self.settings.expiration_check_interval_ms
            self.expire_transactional_ids(now_ms)

    def abort_timed_out(self, now_ms: int) -> None:
        """Abort, with a bumped epoch (fencing the producer), every Ongoing transaction older
        than its timeout; finish any prepared transaction whose Complete record failed."""
        for metadata in list(self.transactions.values()):
            if metadata.pending is not None or not self._serving(metadata):
                continue
            if (
                metadata.state is S.ONGOING
                and metadata.start_timestamp_ms + metadata.timeout_ms < now_ms
            ):
                log.info(
                    "aborting transaction of %r (producer id %d): older than its timeout %d ms",
                    metadata.transactional_id,
                    metadata.producer_id,
                    metadata.timeout_ms,
                )
                self._fence_and_abort(metadata, now_ms, lambda code: None)
            elif metadata.state in _PREPARED and metadata.transactional_id not in self._completing:
                self._send_markers(metadata, now_ms)

    def expire_transactional_ids(self, now_ms: int) -> None:
        """Forget (tombstone) ids idle longer than ``transactional.id.expiration.ms``."""
        for metadata in list(self.transactions.values()):
            if (
                metadata.pending is None
                and metadata.state in _IDLE
                and metadata.last_update_timestamp_ms + self.settings.id_expiration_ms <= now_ms
                and self._serving(metadata)
            ):
                target = metadata.prepare(S.DEAD, last_update_timestamp_ms=now_ms)
                self._write(metadata, target, self._forget(metadata))

    def _forget(self, metadata: TransactionMetadata) -> Callable[[ErrorCode], None]:
        def written(code: ErrorCode) -> None:
            transactional_id = metadata.transactional_id
            if code is ErrorCode.none and self.transactions.get(transactional_id) is metadata:
                del self.transactions[transactional_id]
                log.info("transactional id %r expired", transactional_id)

        return written

    # --- internals --------------------------------------------------------------------------

    def _serving(self, metadata: TransactionMetadata) -> bool:
        return self.txn_error(metadata.transactional_id) is ErrorCode.none

    def _validate(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        *,
        pending_ok: bool = False,
    ) -> tuple[ErrorCode, TransactionMetadata | None]:
        """Kafka's checks before AddPartitionsToTxn, AddOffsetsToTxn and EndTxn."""
        error = self.txn_error(transactional_id)
        if error is not ErrorCode.none:
            return error, None
        metadata = self.transactions.get(transactional_id)
        if metadata is None or metadata.producer_id != producer_id:
            return ErrorCode.invalid_producer_id_mapping, None
        if metadata.producer_epoch != producer_epoch:
            return ErrorCode.producer_fenced, None
        if not pending_ok and (
            metadata.pending is not None or metadata.state is S.PREPARE_EPOCH_FENCE
        ):
            return ErrorCode.concurrent_transactions, None
        return ErrorCode.none, metadata

    def _release(
        self, transactional_id: str, due: Callable[[_Held], bool] = lambda _: True
    ) -> None:
        """Serve the held requests of ``transactional_id`` that are ``due`` (all by default)
        again, without holding them a second time."""
        waiting = self._held.pop(transactional_id, [])
        kept = [held for held in waiting if not due(held)]
        if kept:
            self._held[transactional_id] = kept
        for held in waiting:
            if due(held):
                held.retry(False)

    def _fence_and_abort(
        self, metadata: TransactionMetadata, now_ms: int, reply: Callable[[ErrorCode], None]
    ) -> None:
        """Abort an Ongoing transaction with a bumped epoch (unless exhausted), so that the
        producer that opened it is fenced."""
        check_transition(metadata.state, S.PREPARE_EPOCH_FENCE)
        epoch = metadata.producer_epoch
        metadata.state = S.PREPARE_EPOCH_FENCE
        target = metadata.prepare(
            S.PREPARE_ABORT,
            producer_epoch=epoch if is_epoch_exhausted(epoch) else epoch + 1,
            last_producer_epoch=NO_PRODUCER_EPOCH,
            last_update_timestamp_ms=now_ms,
        )

        def written(code: ErrorCode) -> None:
            if code is not ErrorCode.none and metadata.state is S.PREPARE_EPOCH_FENCE:
                metadata.state = S.ONGOING
            reply(code)
            if code is ErrorCode.none:
                self._send_markers(metadata, now_ms)

        self._write(metadata, target, written)

    def _send_markers(self, metadata: TransactionMetadata, now_ms: int) -> None:
        """Markers for a prepared transaction, then its Complete record."""
        transactional_id = metadata.transactional_id
        prepared = metadata.state
        self._completing.add(transactional_id)

        def markers_written() -> None:
            if self.transactions.get(transactional_id) is not metadata:
                return  # unloaded since (and maybe loaded again): that load completes it
            self._completing.discard(transactional_id)
            if metadata.state is not prepared or metadata.pending is not None:
                return
            target = metadata.prepare(
                _PREPARED[prepared], partitions=frozenset(), last_update_timestamp_ms=now_ms
            )
            self._write(metadata, target, lambda code: None)

        self._writer.write_markers(
            producer_id=metadata.producer_id,
            producer_epoch=metadata.producer_epoch,
            commit=prepared is S.PREPARE_COMMIT,
            coordinator_epoch=self._coordinator_epochs.get(self.partition_of(transactional_id), 0),
            partitions=metadata.partitions,
            done=markers_written,
        )

    def _write(
        self,
        metadata: TransactionMetadata,
        target: TransactionMetadata,
        done: Callable[[ErrorCode], None],
    ) -> None:
        """Write ``target`` (a tombstone for Dead); apply it once written, then ``done``."""
        value: TransactionLogValue | None = None if target.state is S.DEAD else target.to_value()
        record = TransactionLogRecord(TransactionLogKey(metadata.transactional_id), value)

        def written(code: ErrorCode) -> None:
            if metadata.pending is not target:
                done(ErrorCode.not_coordinator)  # unloaded meanwhile
                return
            if code is ErrorCode.none:
                metadata.complete(target)
                if target.state not in _PREPARED:
                    self._release(metadata.transactional_id)
            else:
                metadata.pending = None
                log.warning(
                    "cannot write the %s state of transactional id %r: %s",
                    target.state.value,
                    metadata.transactional_id,
                    code.name.upper(),
                )
            done(code)

        self._writer.append(self.partition_of(metadata.transactional_id), [record], written)


def _is_current(metadata: TransactionMetadata, producer_id: int, producer_epoch: int) -> bool:
    """The request's producer id and epoch may bump the epoch (Kafka's ``isValidProducerId``:
    the current ones, or any when the id was just created)."""
    return metadata.producer_epoch == NO_PRODUCER_EPOCH or (
        producer_id == metadata.producer_id and producer_epoch == metadata.producer_epoch
    )


def _is_retry(metadata: TransactionMetadata, producer_id: int, producer_epoch: int) -> bool:
    """A retried KIP-360 InitProducerId whose answer was lost: it carries what the producer had
    before that answer (the epoch before the bump, or the exhausted epoch of the producer id
    before a new one). Kafka's ``prepareIncrementProducerEpoch`` retry case."""
    last = metadata.last_producer_epoch
    if last == NO_PRODUCER_EPOCH or producer_epoch != last:
        return False
    if is_epoch_exhausted(last):
        return producer_id == metadata.previous_producer_id
    return producer_id == metadata.producer_id
