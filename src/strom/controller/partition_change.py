"""One partition's next ISR, eligible leader replicas and leader (Kafka's
``PartitionChangeBuilder``, with KIP-966's eligible leader replicas as Kafka 4.1 keeps them).

The caller names the target ISR (a broker fenced, an AlterPartition) and the kind of election;
:func:`partition_change` works out the rest and returns the ``PartitionChangeRecord`` (None when
nothing changes):

* **Eligible leader replicas (ELR)**, when the cluster keeps them: while the ISR is at least
  the topic's ``min.insync.replicas`` the ELR is empty. Below it, the high watermark cannot
  move (leaders hold it back, "strict min ISR"), so a replica that leaves the ISR then still
  holds every committed record: it joins the ELR, unless it restarted after an unclean
  shutdown (it may have lost unflushed records). Without ELR, the ISR never empties: its last
  member stays, as Kafka's older controllers keep it.
* **Election** (``Election.ONLINE`` for fencing, unfencing and ISR changes): the current
  leader while it stays acceptable and in the ISR; else the first replica, in replica order,
  that is acceptable and in the ISR; with an empty ISR, one in the ELR (it becomes the ISR on
  its own); else the *last known leader* when it is back (the replica that led when the ISR
  emptied, kept in ``last_known_elr``), which Kafka elects as it did before KIP-966; and only
  for ``Election.UNCLEAN`` (ElectLeaders, or a topic with ``unclean.leader.election.enable``)
  any acceptable replica. The last two are unclean: the new leader is the whole ISR, the
  ELR is cleared, and the partition's leader recovery state becomes RECOVERING (KIP-704) until
  its leader reports RECOVERED in an AlterPartition.
* ``Election.PREFERRED`` tries the first replica before the current leader.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Collection
from dataclasses import dataclass

from strom.metadata import (
    NO_LEADER,
    NO_LEADER_CHANGE,
    LeaderRecoveryState,
    PartitionChangeRecord,
    PartitionRegistration,
)

__all__ = ["Election", "ElectionRules", "partition_change"]


class Election(enum.Enum):
    ONLINE = enum.auto()
    PREFERRED = enum.auto()
    UNCLEAN = enum.auto()


@dataclass(frozen=True)
class ElectionRules:
    """What one partition's change may do."""

    acceptable: Callable[[int], bool]
    """May this broker lead (registered, unfenced, not shutting down)?"""
    min_isr: int
    """The topic's effective ``min.insync.replicas`` (at most its replication factor)."""
    elr_enabled: bool
    unclean_shutdown: Collection[int] = ()
    """Brokers that restarted after an unclean shutdown: out of the ELR, not electable."""


@dataclass(frozen=True, slots=True)
class _Elected:
    leader: int
    unclean: bool = False


def partition_change(
    topic_id: uuid.UUID,
    partition_id: int,
    partition: PartitionRegistration,
    rules: ElectionRules,
    *,
    isr: tuple[int, ...] | None = None,
    election: Election = Election.ONLINE,
    recovery: int | None = None,
) -> PartitionChangeRecord | None:
    """The change that gives ``partition`` the target ``isr`` (None: the current one), the
    leader recovery state ``recovery`` (None: the current one) and a leader elected by
    ``election``; None when nothing would change."""
    target_isr = partition.isr if isr is None else isr
    target_recovery = partition.leader_recovery_state if recovery is None else recovery
    elr, last_known = _target_elr(partition, target_isr, rules)
    elected = _elect(partition, target_isr, elr, rules, election)
    if elected.leader != partition.leader and elected.leader in elr and not target_isr:
        target_isr = (elected.leader,)
        elr = tuple(b for b in elr if b != elected.leader)
    if elected.unclean and elected.leader != partition.leader:
        target_isr = (elected.leader,)
        target_recovery = LeaderRecoveryState.RECOVERING  # it may lack committed records
    if elected.unclean:
        elr = ()  # the new leader's log is the truth: no one else is known to hold it all
    if not target_isr and not rules.elr_enabled:
        target_isr = partition.isr  # never an empty ISR without ELR: its last member stays
    leader = elected.leader
    if leader != NO_LEADER:
        last_known = ()
    elif not target_isr and rules.elr_enabled and partition.leader != NO_LEADER:
        last_known = (partition.leader,)  # the partition just lost its last leader
    change = PartitionChangeRecord(
        partition_id=partition_id,
        topic_id=topic_id,
        isr=None if target_isr == partition.isr else target_isr,
        leader=NO_LEADER_CHANGE if leader == partition.leader else leader,
        eligible_leader_replicas=None if elr == partition.eligible_leader_replicas else elr,
        last_known_elr=None if last_known == partition.last_known_elr else last_known,
        leader_recovery_state=LeaderRecoveryState.NO_CHANGE
        if target_recovery == partition.leader_recovery_state
        else target_recovery,
    )
    if change == PartitionChangeRecord(partition_id=partition_id, topic_id=topic_id):
        return None
    return change


def _target_elr(
    partition: PartitionRegistration, isr: tuple[int, ...], rules: ElectionRules
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The ELR and last known leader before the election."""
    if not rules.elr_enabled:
        return (), ()
    if len(isr) >= rules.min_isr:
        return (), ()
    candidates = set(partition.eligible_leader_replicas) | set(partition.isr)
    elr = tuple(
        b
        for b in partition.replicas
        if b in candidates and b not in isr and b not in rules.unclean_shutdown
    )
    return elr, partition.last_known_elr


def _elect(
    partition: PartitionRegistration,
    isr: tuple[int, ...],
    elr: tuple[int, ...],
    rules: ElectionRules,
    election: Election,
) -> _Elected:
    def valid(broker: int) -> bool:
        in_sync = broker in isr or (not isr and broker in elr)
        return in_sync and broker not in rules.unclean_shutdown and rules.acceptable(broker)

    order = list(partition.replicas)
    if election is Election.PREFERRED and valid(order[0]):
        return _Elected(order[0])
    if partition.leader != NO_LEADER and valid(partition.leader):
        return _Elected(partition.leader)
    leader = next((b for b in order if valid(b)), NO_LEADER)
    if leader != NO_LEADER:
        return _Elected(leader)
    if not isr and not elr and len(partition.last_known_elr) == 1:
        last_leader = partition.last_known_elr[0]
        if rules.elr_enabled and rules.acceptable(last_leader):
            return _Elected(last_leader, unclean=True)
    if election is Election.UNCLEAN:
        leader = next((b for b in order if rules.acceptable(b)), NO_LEADER)
        if leader != NO_LEADER:
            return _Elected(leader, unclean=True)
    return _Elected(NO_LEADER)
