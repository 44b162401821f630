"""acks=all: writes that wait until every in-sync replica has them (Kafka's ``DelayedProduce``).

A write is *acknowledged* once its partition's high watermark reaches the offset after its last
record (``ReplicaManager.is_acknowledged``); it fails with NOT_ENOUGH_REPLICAS_AFTER_APPEND
when the ISR shrank below ``min.insync.replicas`` meanwhile, or with the partition's error when
it is gone or led elsewhere (the replica manager wakes the purgatory on leadership and ISR
changes too). :func:`delay_produce` is the one way to wait for that, used by everything the
replica manager appends with acks=all: producers (``ReplicaManager.append_records``), the
coordinators' writes and the transaction markers (``ReplicaManager.when_acknowledged`` and
``wait_for_acks``). It reads the partitions' state through :class:`AcksState` (the replica
manager's ``is_acknowledged``), not the replica manager itself. When every partition is decided
already (on one node, as soon as the append is done) the outcome is given at once and no
operation is built; otherwise a ``DelayedProduce`` waits in the replica manager's produce
purgatory, and the partitions still undecided at its timeout answer REQUEST_TIMED_OUT (the
batch stays in the leader's log).

A partition that leaves this broker's leadership (deleted, moved away, followed now) is answered
at once with its error (``Purgatory.complete_left``), whatever the image holds under its name by
then.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Protocol

from strom.common import ErrorCode, TopicPartition
from strom.server.replica.purgatory import DelayedOperation, Purgatory

__all__ = [
    "AcksCallback",
    "AcksState",
    "DelayedProduce",
    "acks_outcomes",
    "delay_produce",
    "wait_for_acks",
]

AcksCallback = Callable[[dict[TopicPartition, ErrorCode]], object]
"""Hears each partition's acks=all outcome, once."""


class AcksState(Protocol):
    """Where acks=all writes stand (the replica manager)."""

    def is_acknowledged(self, tp: TopicPartition, required_offset: int) -> ErrorCode | None:
        """NONE once the high watermark reaches ``required_offset``, None before; the
        partition's error when it failed (ISR below min.insync.replicas, gone, led elsewhere)."""
        ...


class DelayedProduce(DelayedOperation):
    """acks=all: waits until each partition's high watermark passes its appended batch.

    ``required_offsets`` maps each successfully appended partition to its last offset + 1.
    ``errors`` is the outcome per partition: NONE when acknowledged, REQUEST_TIMED_OUT while
    pending (so an expired operation reads right), or the partition's error; ``callback``
    hears it on completion.
    """

    def __init__(
        self,
        *,
        timeout_ms: int,
        required_offsets: Mapping[TopicPartition, int],
        replica_manager: AcksState,
        callback: AcksCallback | None = None,
    ) -> None:
        super().__init__(timeout_ms=timeout_ms)
        self.required_offsets = dict(required_offsets)
        self.errors: dict[TopicPartition, ErrorCode] = dict.fromkeys(
            required_offsets, ErrorCode.request_timed_out
        )
        self._pending = set(required_offsets)
        self._replica_manager = replica_manager
        self._callback = callback

    def on_partition_left(self, key: TopicPartition, error: ErrorCode) -> None:
        if key in self._pending:
            self.errors[key] = error
            self._pending.discard(key)

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

    def on_complete(self) -> None:
        if self._callback is not None:
            self._callback(dict(self.errors))


def acks_outcomes(
    replica_manager: AcksState, required_offsets: Mapping[TopicPartition, int]
) -> dict[TopicPartition, ErrorCode] | None:
    """Every partition's outcome when all are decided already, else None."""
    outcomes: dict[TopicPartition, ErrorCode] = {}
    for tp, offset in required_offsets.items():
        outcome = replica_manager.is_acknowledged(tp, offset)
        if outcome is None:
            return None
        outcomes[tp] = outcome
    return outcomes


def delay_produce(
    replica_manager: AcksState,
    purgatory: Purgatory[DelayedProduce],
    required_offsets: Mapping[TopicPartition, int],
    *,
    timeout_ms: int,
    callback: AcksCallback,
) -> None:
    """``callback(outcomes)`` once every partition of ``required_offsets`` is decided: at once
    (before returning) when they all are, else from the purgatory (see the module doc)."""
    decided = acks_outcomes(replica_manager, required_offsets)
    if decided is not None:
        callback(decided)
        return
    operation = DelayedProduce(
        timeout_ms=timeout_ms,
        required_offsets=required_offsets,
        replica_manager=replica_manager,
        callback=callback,
    )
    purgatory.try_complete_else_watch(operation, required_offsets)


async def wait_for_acks(
    replica_manager: AcksState,
    purgatory: Purgatory[DelayedProduce],
    required_offsets: Mapping[TopicPartition, int],
    *,
    timeout_ms: int,
) -> dict[TopicPartition, ErrorCode]:
    """:func:`delay_produce`, awaited; no suspension when every partition is decided."""
    decided_now = acks_outcomes(replica_manager, required_offsets)
    if decided_now is not None:  # the usual case on one node: no future, no operation
        return decided_now
    future: asyncio.Future[dict[TopicPartition, ErrorCode]]
    future = asyncio.get_running_loop().create_future()

    def decided(outcomes: dict[TopicPartition, ErrorCode]) -> None:
        if not future.done():
            future.set_result(outcomes)

    delay_produce(
        replica_manager, purgatory, required_offsets, timeout_ms=timeout_ms, callback=decided
    )
    return await future
