"""Planted bugs: mutations of the real replica and coordinator code that the replica
simulation must catch (issue 25 part 4). ``simulate_replicas.py --plant NAME`` runs the seeds
with one of them in place (patched in this process only, undone after), so that how many seeds
catch each can be measured again after any change of the simulation:

    simulate_replicas.py --seeds 300 --steps 150 --plant forget-restarted

A seed that fails with a mutation in place caught it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from strom.common import ErrorCode
from strom.replication.partition_replication import IsrChange, PartitionReplication
from strom.server.coordinator import coordinator_runtime, txn_markers
from strom.server.coordinator.group_coordinator_runtime import GroupCoordinatorRuntime
from strom.server.replica import leadership
from strom.server.replica.partition import Partition
from strom.server.replica.replica_manager import ReplicaManager

Patch = tuple[object, str, Any]
"""(owner, attribute, value put in its place)."""


def _keep_restarted_followers() -> list[Patch]:
    """(a) A leader keeps a restarted follower's state (its earlier life's position)."""
    return [(PartitionReplication, "forget_follower", lambda self, broker_id: None)]


def _epoch_start_zero() -> list[Patch]:
    """(b) ``leader_epoch_start_offset=0``: a follower joins the ISR below its leader's epoch."""
    become = leadership.become_leader

    def mutated(partition: Partition, **kwargs: Any) -> None:
        become(partition, **kwargs)
        assert partition.replication is not None
        partition.replication.leader_epoch_start_offset = 0

    return [(leadership, "become_leader", mutated)]


def _candidate(**forced: Any) -> list[Patch]:
    candidate = PartitionReplication.high_watermark_candidate

    def mutated(self: PartitionReplication, leader_log_end_offset: int, **kwargs: Any) -> Any:
        return candidate(self, leader_log_end_offset, **{**kwargs, **forced})

    return [(PartitionReplication, "high_watermark_candidate", mutated)]


def _no_strict_min_isr() -> list[Patch]:
    """(c) KIP-966's strict min ISR dropped: the high watermark moves below min ISR."""
    return _candidate(min_isr=1)


def _produce_purgatory_not_woken() -> list[Patch]:
    """(d) A leadership or ISR change wakes the parked fetches but not the parked produces
    (they are answered at their timeout, or by a later high watermark move)."""

    def left(manager: Any, tp: Any, error: ErrorCode) -> None:
        for purgatory in manager.purgatories:
            if purgatory is not manager.produce_purgatory:
                purgatory.complete_left(tp, error)

    def notify(manager: ReplicaManager, tp: Any, update: Any) -> None:
        for listener in manager._listeners:
            if update is not None or listener != manager.produce_purgatory.check_and_complete:
                listener(tp, update)
        if update is None:
            manager.follower_fetch_purgatory.check_and_complete(tp)

    return [(leadership, "_left", left), (ReplicaManager, "notify", notify)]


def _lost_answer_drops_expansion() -> list[Patch]:
    """(e) Part 1's bug: an ISR change whose answer was lost is dropped."""

    def failed(self: PartitionReplication, change: IsrChange, error: ErrorCode | None) -> bool:
        if self.pending is change:
            self.pending = None
        return False

    return [(PartitionReplication, "isr_change_failed", failed)]


def _fenced_follower_holds_back() -> list[Patch]:
    """(f) Part 3's stall: a fenced follower out of the ISR still holds the high watermark
    back while it is caught up by the lag time."""
    return _candidate(eligible=None)


def _offset_commit_before_high_watermark() -> list[Patch]:
    """The group coordinator answers an OffsetCommit once appended, not once committed."""
    append = coordinator_runtime.CoordinatorRuntime.append

    def mutated(
        self: Any, partition: int, records: Any, done: Callable[[ErrorCode], None], **kw: Any
    ) -> None:
        answered: list[ErrorCode] = []

        def once(code: ErrorCode) -> None:
            if not answered:
                answered.append(code)
                done(code)

        append(self, partition, records, once, **kw)
        once(ErrorCode.none)

    return [(GroupCoordinatorRuntime, "append", mutated)]


def _load_stops_at_high_watermark() -> list[Patch]:
    """A coordinator loads its partition only up to the high watermark, not to the log end."""
    chunks = coordinator_runtime.CoordinatorRuntime._chunks

    def mutated(self: Any, tp: Any) -> Iterator[Any]:
        log = self._replica_manager.log_manager.get(tp)
        for chunk in chunks(self, tp):
            kept = [c for c in chunk if log is None or c[0].base_offset < log.high_watermark]
            if kept:
                yield kept
            if len(kept) < len(chunk):
                return

    return [(coordinator_runtime.CoordinatorRuntime, "_chunks", mutated)]


def _markers_to_one_partition() -> list[Patch]:
    """A transaction's markers go to only one of its partitions."""
    deliver = txn_markers.TxnMarkerChannel.deliver

    async def mutated(self: Any, marker: Any, partitions: Any) -> None:
        await deliver(self, marker, sorted(partitions)[:1])

    return [(txn_markers.TxnMarkerChannel, "deliver", mutated)]


def _markers_not_retried() -> list[Patch]:
    """A marker refused for a retriable reason (no leader, too few replicas, a timeout, a
    lost connection) is given up on."""
    return [(txn_markers, "_RETRIABLE", frozenset())]


PLANTED: dict[str, Callable[[], list[Patch]]] = {
    "a-forget-restarted": _keep_restarted_followers,
    "b-epoch-start-zero": _epoch_start_zero,
    "c-no-strict-min-isr": _no_strict_min_isr,
    "d-produce-not-woken": _produce_purgatory_not_woken,
    "e-lost-answer-drops-expansion": _lost_answer_drops_expansion,
    "f-fenced-holds-back": _fenced_follower_holds_back,
    "offsetcommit-before-hw": _offset_commit_before_high_watermark,
    "load-stops-at-hw": _load_stops_at_high_watermark,
    "commit-one-partition": _markers_to_one_partition,
    "markers-not-retried": _markers_not_retried,
}


@contextmanager
def planted(name: str) -> Iterator[None]:
    """The named mutation in place until the block ends."""
    patches = PLANTED[name]()
    saved = [(owner, attribute, vars(owner).get(attribute)) for owner, attribute, _ in patches]
    for owner, attribute, value in patches:
        setattr(owner, attribute, value)
    try:
        yield
    finally:
        for owner, attribute, value in saved:
            if value is None:
                delattr(owner, attribute)  # it was inherited
            else:
                setattr(owner, attribute, value)
