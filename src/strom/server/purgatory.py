"""Requests that wait for a condition: acks=all produce, long-poll fetch (Kafka's purgatory).

A ``DelayedOperation`` completes once, either because its condition holds (``try_complete``) or
because its time is up (expiration), and then wakes whoever awaits :meth:`DelayedOperation.wait`.
A ``Purgatory`` keeps the operations that are not complete yet in watcher lists keyed by
``TopicPartition``; the replica manager's high watermark listener calls
:meth:`Purgatory.check_and_complete` for the partition whose high watermark moved, which
re-checks exactly the operations watching it. Kafka's ``DelayedOperationPurgatory``, on one
event loop: no locks, and a timer per operation (``loop.call_later``) instead of a timing wheel.

* ``DelayedProduce`` (acks=all): each appended partition must see its high watermark reach the
  offset after its last appended record. On a single node that is true as soon as the append is
  done, so the produce handler answers at once (``DelayedProduce.outcomes_now``) and builds no
  operation; the mechanism stays for replication. Expired partitions answer REQUEST_TIMED_OUT.
* ``DelayedFetch`` (long poll): completes when the bytes readable from its partitions reach
  ``min_bytes`` (counting what each high watermark advance made readable; for read_committed,
  what lies below the last stable offset, re-measured on every advance, so a transaction's
  records count when its marker moves the last stable offset, not when they are appended), or
  when one of its partitions changes in a way the fetch must hear about (gone, led elsewhere,
  fetch offset out of range), or at ``max_wait``. The fetch handler then reads again and
  answers.

``Purgatory.shutdown`` completes everything at once (so that long polls answer before the
listener stops) and completes later operations on arrival.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

from strom.common import ErrorCode, KafkaError, TopicPartition
from strom.server.replica_manager import (
    READ_COMMITTED,
    READ_UNCOMMITTED,
    HighWatermarkUpdate,
    ReplicaManager,
)
from strom.storage.fetch_isolation import FetchIsolation

__all__ = [
    "DelayedFetch",
    "DelayedOperation",
    "DelayedProduce",
    "FetchPartitionStatus",
    "Purgatory",
]

log = logging.getLogger(__name__)


class DelayedOperation:
    """An operation that completes once: when ``try_complete`` finds it done, or on expiry.

    Subclasses implement :meth:`try_complete` (check; call :meth:`force_complete` when done
    and return its result) and may override :meth:`on_complete`, :meth:`on_expiration` and
    :meth:`on_event`. Create it inside the event loop.
    """

    def __init__(self, *, timeout_ms: int) -> None:
        self.timeout_ms = max(0, timeout_ms)
        self._future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._timer: asyncio.TimerHandle | None = None
        self.expired = False

    @property
    def completed(self) -> bool:
        return self._future.done()

    def try_complete(self) -> bool:
        """Complete if the condition holds; True when this call completed it."""
        raise NotImplementedError

    def on_event(self, key: TopicPartition, update: HighWatermarkUpdate | None) -> None:
        """Something happened on a watched key, before ``try_complete`` looks (default: no-op)."""

    def on_complete(self) -> None:
        """Called once, when the operation completes (either way), before waiters wake."""

    def on_expiration(self) -> None:
        """Called once, after ``on_complete``, when the operation completed by expiring."""

    def force_complete(self) -> bool:
        """Complete now unless already done; True for the call that completed it."""
        if self._future.done():
            return False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        try:
            self.on_complete()
        finally:
            self._future.set_result(None)
        return True

    async def wait(self) -> None:
        """Until the operation completes. Cancelling the waiter leaves the operation alone."""
        await asyncio.shield(self._future)

    def _expire(self) -> None:
        self._timer = None
        self.expired = True
        if self.force_complete():
            self.on_expiration()


Op = TypeVar("Op", bound=DelayedOperation)


class Purgatory(Generic[Op]):
    """Delayed operations watched by ``TopicPartition`` (see the module doc)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._watchers: dict[TopicPartition, dict[Op, None]] = {}
        self._keys: dict[Op, tuple[TopicPartition, ...]] = {}
        self._shut_down = False

    def __len__(self) -> int:
        """Operations waiting."""
        return len(self._keys)

    def __bool__(self) -> bool:
        """A purgatory is a purgatory even when nothing waits in it (``__len__`` would make an
        empty one false, and ``given or default`` pick the default)."""
        return True

    def watched(self, key: TopicPartition) -> int:
        return len(self._watchers.get(key, ()))

    def try_complete_else_watch(self, operation: Op, keys: Iterable[TopicPartition]) -> bool:
        """Complete at once if possible, else watch ``keys`` until done or expired.

        Returns True when the operation is complete on return.
        """
        if operation.try_complete():
            return True
        if self._shut_down:
            operation.force_complete()
            return True
        watched = tuple(dict.fromkeys(keys))
        self._keys[operation] = watched
        for key in watched:
            self._watchers.setdefault(key, {})[operation] = None
        operation._future.add_done_callback(lambda _: self._forget(operation))
        loop = asyncio.get_running_loop()
        operation._timer = loop.call_later(operation.timeout_ms / 1000, operation._expire)
        return False

    def check_and_complete(
        self, key: TopicPartition, update: HighWatermarkUpdate | None = None
    ) -> int:
        """Re-check the operations watching ``key``; returns how many completed."""
        watchers = self._watchers.get(key)
        if not watchers:
            return 0
        completed = 0
        for operation in list(watchers):
            if operation.completed:
                continue
            operation.on_event(key, update)
            if operation.try_complete():
                completed += 1
        return completed

    def shutdown(self) -> None:
        """Complete every waiting operation now, and every later one on arrival."""
        self._shut_down = True
        for operation in list(self._keys):
            operation.force_complete()

    def _forget(self, operation: Op) -> None:
        for key in self._keys.pop(operation, ()):
            watchers = self._watchers.get(key)
            if watchers is None:
                continue
            watchers.pop(operation, None)
            if not watchers:
                del self._watchers[key]


# --- produce -------------------------------------------------------------------------------


class DelayedProduce(DelayedOperation):
    """acks=all: waits until each partition's high watermark passes its appended batch.

    ``required_offsets`` maps each successfully appended partition to its last offset + 1.
    ``errors`` is the outcome per partition: NONE when acknowledged, REQUEST_TIMED_OUT while
    pending (so an expired operation reads right), or the partition's error.
    """

    def __init__(
        self,
        *,
        timeout_ms: int,
        required_offsets: dict[TopicPartition, int],
        replica_manager: ReplicaManager,
    ) -> None:
        super().__init__(timeout_ms=timeout_ms)
        self.required_offsets = dict(required_offsets)
        self.errors: dict[TopicPartition, ErrorCode] = dict.fromkeys(
            required_offsets, ErrorCode.request_timed_out
        )
        self._pending = set(required_offsets)
        self._replica_manager = replica_manager

    @staticmethod
    def outcomes_now(
        replica_manager: ReplicaManager, required_offsets: dict[TopicPartition, int]
    ) -> dict[TopicPartition, ErrorCode] | None:
        """Every partition's outcome when all are decided already (the usual case on one
        node: the high watermark moves with the append), else None: wait in the purgatory."""
        outcomes: dict[TopicPartition, ErrorCode] = {}
        for tp, offset in required_offsets.items():
            outcome = replica_manager.is_acknowledged(tp, offset)
            if outcome is None:
                return None
            outcomes[tp] = outcome
        return outcomes

    def try_complete(self) -> bool:
        for tp in list(self._pending):
            outcome = self._replica_manager.is_acknowledged(tp, self.required_offsets[tp])
            if outcome is None:
                continue
            self.errors[tp] = outcome
            self._pending.discard(tp)
        if self._pending:
            return False
        return self.force_complete()


# --- fetch ---------------------------------------------------------------------------------


@dataclass(slots=True)
class FetchPartitionStatus:
    """A waiting fetch's view of one partition."""

    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    readable: int = 0
    """Bytes known to be readable from the fetch offset (capped at ``max_bytes``)."""


class DelayedFetch(DelayedOperation):
    """A fetch waiting for ``min_bytes`` (see the module doc)."""

    def __init__(
        self,
        *,
        timeout_ms: int,
        min_bytes: int,
        partitions: dict[TopicPartition, FetchPartitionStatus],
        replica_manager: ReplicaManager,
        isolation_level: int = READ_UNCOMMITTED,
    ) -> None:
        super().__init__(timeout_ms=timeout_ms)
        self.min_bytes = min_bytes
        self.partitions = partitions
        self.isolation_level = isolation_level
        self._replica_manager = replica_manager

    @property
    def readable(self) -> int:
        return sum(status.readable for status in self.partitions.values())

    def on_event(self, key: TopicPartition, update: HighWatermarkUpdate | None) -> None:
        status = self.partitions.get(key)
        if status is None or update is None or status.fetch_offset >= update.new:
            return
        if self.isolation_level == READ_COMMITTED:
            status.readable = self._committed_bytes(key, status)
            return
        # Everything that became readable counts when the fetch offset was below it; when the
        # offset is inside the new range, some of it does (an estimate: the answer re-reads).
        status.readable = min(status.max_bytes, status.readable + update.size)

    def try_complete(self) -> bool:
        for tp, status in self.partitions.items():
            if self._must_answer(tp, status):
                return self.force_complete()
        if self.readable >= self.min_bytes:
            return self.force_complete()
        return False

    def _committed_bytes(self, tp: TopicPartition, status: FetchPartitionStatus) -> int:
        """Bytes readable below the last stable offset from the fetch offset (at most
        ``max_bytes``); what is already known when the partition is not readable now."""
        try:
            partition = self._replica_manager.partition(tp)
            if partition.log.last_stable_offset <= status.fetch_offset:
                return status.readable
            return partition.log.readable_bytes(
                status.fetch_offset,
                max_bytes=status.max_bytes,
                isolation=FetchIsolation.TXN_COMMITTED,
            )
        except KafkaError:
            return status.readable  # try_complete answers a partition gone or moved

    def _must_answer(self, tp: TopicPartition, status: FetchPartitionStatus) -> bool:
        """The partition changed in a way only an answer can tell the client."""
        try:
            partition = self._replica_manager.partition(
                tp, current_leader_epoch=status.current_leader_epoch
            )
        except KafkaError:
            return True  # gone, led elsewhere, or a new leader epoch
        return not (partition.log_start_offset <= status.fetch_offset <= partition.log_end_offset)
