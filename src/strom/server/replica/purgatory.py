"""Requests that wait for a condition: acks=all produce, long-poll fetch (Kafka's purgatory).

A ``DelayedOperation`` completes once, either because its condition holds (``try_complete``) or
because its time is up (expiration), and then wakes whoever awaits :meth:`DelayedOperation.wait`.
A ``Purgatory`` keeps the operations that are not complete yet in watcher lists keyed by
``TopicPartition``; the replica manager's high watermark listener calls
:meth:`Purgatory.check_and_complete` for the partition whose high watermark moved, which
re-checks exactly the operations watching it. Kafka's ``DelayedOperationPurgatory``, on one
event loop: no locks, and a timer per operation (the ``Timer`` handed in, the event loop's by
default) instead of a timing wheel.

The replica manager owns three of them (Kafka's ``ReplicaManager`` owns its purgatories):
produce (``delayed_produce.DelayedProduce``, acks=all: woken by high watermark moves),
consumer fetch and follower fetch (``delayed_fetch.DelayedFetch``, long polls: woken by high
watermark moves and by appends respectively); their modules say when each completes.

``Purgatory.complete_left`` answers the operations watching a partition that left this broker's
leadership with that partition's error. ``Purgatory.shutdown`` completes everything at once (so
that long polls answer before the listener stops) and completes later operations on arrival.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from strom.common import ErrorCode, TopicPartition
from strom.common.timer import LoopTimer, Timer, TimerHandle
from strom.server.replica.replica_results import HighWatermarkUpdate

__all__ = ["DelayedOperation", "Purgatory"]

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
        self._timer: TimerHandle | None = None
        self.expired = False

    @property
    def completed(self) -> bool:
        return self._future.done()

    def try_complete(self) -> bool:
        """Complete if the condition holds; True when this call completed it."""
        raise NotImplementedError

    def on_event(self, key: TopicPartition, update: HighWatermarkUpdate | None) -> None:
        """Something happened on a watched key, before ``try_complete`` looks (default: no-op)."""

    def on_partition_left(self, key: TopicPartition, error: ErrorCode) -> None:
        """A watched partition left this broker's leadership (deleted, moved away, followed
        now), before ``try_complete`` looks: its part of the answer is ``error``."""

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

    def __init__(self, name: str, timer: Timer | None = None) -> None:
        self.name = name
        self._timer = timer or LoopTimer()
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
        operation._timer = self._timer.call_later(operation.timeout_ms, operation._expire)
        return False

    def check_and_complete(
        self, key: TopicPartition, update: HighWatermarkUpdate | None = None
    ) -> int:
        """Re-check the operations watching ``key``; returns how many completed."""
        return self._recheck(key, lambda operation: operation.on_event(key, update))

    def complete_left(self, key: TopicPartition, error: ErrorCode) -> int:
        """``key`` left this broker's leadership: the operations watching it take ``error``
        for it and re-check (Kafka's ``completeDelayedOperationsWhenNotPartitionLeader``),
        without looking the partition up again (a topic deleted and made again in one metadata
        change has a new partition under the same name); returns how many completed."""
        return self._recheck(key, lambda operation: operation.on_partition_left(key, error))

    def _recheck(self, key: TopicPartition, tell: Callable[[Op], None]) -> int:
        """``tell`` each waiting operation watching ``key`` what happened, then try it."""
        watchers = self._watchers.get(key)
        if not watchers:
            return 0
        completed = 0
        for operation in list(watchers):
            if operation.completed:
                continue
            tell(operation)
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
