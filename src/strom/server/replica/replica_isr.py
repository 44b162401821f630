"""The leader's side of replication: its followers' fetch positions and the ISR (Kafka's
``Partition.updateFollowerFetchState``, ``maybeExpandIsr`` and ``maybeShrinkIsr``). A follower's
fetch may move the high watermark and bring it back into the ISR; followers that fell behind for
``replica.lag.time.max.ms`` are proposed for removal (``check_isr``, periodic). Proposals go out
through the manager's ``isr_change_sender`` (AlterPartition) and their answers come back through
``isr_change_done``. Functions of the
:class:`~strom.server.replica.replica_manager.ReplicaManager` whose partitions they change.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from strom.common import ErrorCode, KafkaError, TopicPartition
from strom.replication.partition_replication import IsrChange
from strom.server.replica.partition import Partition

if TYPE_CHECKING:
    from strom.server.replica.replica_manager import ReplicaManager

__all__ = ["check_isr", "count_isr_change", "isr_change_done", "record_follower_fetch"]

log = logging.getLogger(__name__)


def record_follower_fetch(
    manager: ReplicaManager,
    tp: TopicPartition,
    *,
    replica_id: int,
    log_end_offset: int,
    replica_epoch: int = -1,
) -> None:
    """A follower fetched from ``log_end_offset`` (in its broker epoch ``replica_epoch``):
    it has everything below. The high watermark may advance; a follower back in sync is
    proposed for the ISR. A fetch in a broker epoch older than the follower's registered one
    is refused (NOT_LEADER_OR_FOLLOWER), as Kafka's leader does since KIP-903."""
    partition = manager.partition(tp)
    replication = partition.replication
    assert replication is not None
    if replica_id not in replication.followers:
        raise KafkaError(
            ErrorCode.not_leader_or_follower,
            f"broker {replica_id} is not a replica of {tp}",
        )
    registered = manager.image.cluster.brokers.get(replica_id)
    if replica_epoch != -1 and registered is not None and registered.epoch > replica_epoch:
        # Kafka's Replica.updateFetchStateOrThrow (KIP-903): a fetch of the follower's
        # earlier life (long-polled, or late on the network) would count what it lost
        raise KafkaError(
            ErrorCode.not_leader_or_follower,
            f"broker {replica_id} fetched {tp} in broker epoch {replica_epoch}, older than "
            f"its registered epoch {registered.epoch}: a stale fetch",
        )
    now = manager.clock.monotonic_ms()
    replication.record_fetch(
        replica_id,
        fetch_offset=log_end_offset,
        leader_log_end_offset=partition.log_end_offset,
        now_ms=now,
        broker_epoch=replica_epoch,
    )
    manager.maybe_advance_high_watermark(partition)
    if replica_id not in replication.isr:
        _propose_isr_change(manager, partition, now)


def check_isr(manager: ReplicaManager) -> None:
    """Propose shrinking the ISR of each led partition whose followers fell behind for
    ``replica.lag.time.max.ms`` (Kafka's ``maybeShrinkIsr``, run periodically)."""
    now = manager.clock.monotonic_ms()
    for partition in list(manager.local_partitions.values()):
        if partition.replication is not None:
            _propose_isr_change(manager, partition, now)


def _propose_isr_change(manager: ReplicaManager, partition: Partition, now_ms: int) -> None:
    replication = partition.replication
    if replication is None or manager.isr_change_sender is None:
        return
    change = replication.isr_change(
        partition.log_end_offset,
        high_watermark=partition.log.high_watermark,
        now_ms=now_ms,
        eligible=manager.eligible_brokers(),
    )
    if change is None:
        return
    log.info(
        "%s: proposing ISR %s (was %s, partition epoch %d)",
        partition.tp,
        list(change.isr),
        list(replication.isr),
        change.partition_epoch,
    )
    manager.isr_change_sender(partition.tp, replication.leader_epoch, change)


def isr_change_done(
    manager: ReplicaManager,
    tp: TopicPartition,
    *,
    leader_epoch: int,
    change: IsrChange,
    isr: tuple[int, ...] | None,
    partition_epoch: int = -1,
    error: ErrorCode | None = None,
) -> bool:
    """The controller answered ``change`` with the committed ISR, or it failed (``isr``
    None) with ``error`` (None: no answer came). Whether the sender should send it again
    (:meth:`~strom.replication.partition_replication.PartitionReplication.isr_change_failed`)."""
    partition = manager.local_partitions.get(tp)
    replication = None if partition is None else partition.replication
    if partition is None or replication is None or replication.leader_epoch != leader_epoch:
        return False
    if isr is None:
        return replication.isr_change_failed(change, error)
    if partition_epoch >= replication.partition_epoch:
        before = len(replication.isr)
        replication.isr_committed(isr, partition_epoch)
        count_isr_change(manager, before, len(isr))
    manager.maybe_advance_high_watermark(partition)
    manager.notify(tp, None)
    return False


def count_isr_change(manager: ReplicaManager, before: int, after: int) -> None:
    """Kafka's IsrShrinksPerSec and IsrExpandsPerSec: a led partition's committed ISR went
    from ``before`` to ``after`` members (by this leader's AlterPartition, or by the
    controller, which takes a fenced broker out)."""
    metrics = manager.metrics
    if metrics is None or before == after:
        return
    if after < before:
        metrics.isr_shrinks += 1
    else:
        metrics.isr_expands += 1
