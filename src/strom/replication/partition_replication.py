"""What the leader of a partition knows about its replicas: where each follower is, the in-sync
replica set, and what the high watermark may move up to (the leader's part of Kafka's
``Partition`` and ``Replica``).

Pure: the replica manager feeds it follower fetches, the clock and the high watermark (which
lives in the partition's log, :attr:`strom.storage.partition_log.PartitionLog.high_watermark`),
and acts on what it answers.

* **Follower state** (Kafka's ``Replica.updateFetchState``): each fetch reports the follower's
  log end offset (its fetch offset). A follower is *caught up* at a fetch that reached the
  leader's log end offset, or one that reached what the leader's log end offset was at its
  previous fetch (the follower kept pace); it stays caught up for ``replica.lag.time.max.ms``.
* **High watermark candidate** (``maybeIncrementLeaderHW``): the smallest log end offset among
  the leader and the replicas of the maximal ISR, plus followers that are caught up and eligible
  but not in the ISR yet (so that a joining replica is not left behind); a follower the
  controller fenced and took out of the ISR is not eligible, so it holds nothing back. The log
  takes it only when it is higher (``PartitionLog.maybe_increment_high_watermark``): it never
  goes back.
* **ISR changes** go to the controller as AlterPartition, one at a time (KIP-497). Meanwhile the
  *maximal* ISR counts for the high watermark and acks: an expansion counts the new replica at
  once, a shrink not until the controller commits it. Out of sync: an ISR follower not caught up
  within the lag time. In sync again: a follower at or past the high watermark and past the
  start of the current leader epoch, whose broker is eligible (registered, unfenced, not
  shutting down) and fetched in the broker epoch it is registered in now (KIP-903: Kafka's
  ``isReplicaIsrEligible``). The AlterPartition carries each member's broker epoch as its
  fetches reported it, so the controller refuses a member that registered anew meanwhile. A
  follower's broker that registers anew (a restart: its log may have lost an unflushed tail)
  is also forgotten until it fetches again, so that its previous offsets count for nothing.
  A change the controller may have committed (no answer came, or an answer other than
  "not applied") stays pending and is sent again, so that the replica it adds keeps counting
  for the high watermark: dropping it would let a leader cut off from the controllers
  acknowledge writes below an ISR that no longer holds (Kafka's ``handleAlterPartitionError``).
* **Acks**: ``min.insync.replicas`` is checked before an acks=all append (NOT_ENOUGH_REPLICAS)
  and again when its offset is committed (NOT_ENOUGH_REPLICAS_AFTER_APPEND), against the ISR.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from strom.common import ErrorCode

__all__ = ["AckState", "FollowerState", "IsrChange", "PartitionReplication"]

NOT_APPLIED: Final = frozenset({ErrorCode.ineligible_replica, ErrorCode.operation_not_attempted})
"""AlterPartition errors after which the controller has certainly not applied the change."""
AWAIT_METADATA: Final = frozenset(
    {
        ErrorCode.invalid_update_version,
        ErrorCode.fenced_leader_epoch,
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.unknown_topic_id,
        ErrorCode.new_leader_elected,
        ErrorCode.invalid_request,
    }
)
"""AlterPartition errors that say the partition's state moved on: wait for the metadata."""

UNKNOWN_OFFSET: Final = -1
NEVER: Final = -(2**62)
"""``last_caught_up_ms`` of a follower that has not been caught up in this leader epoch."""


@dataclass(slots=True)
class FollowerState:
    """A follower as its leader sees it."""

    broker_id: int
    log_end_offset: int = UNKNOWN_OFFSET
    last_caught_up_ms: int = NEVER
    last_fetch_ms: int = NEVER
    last_fetch_leader_log_end_offset: int = UNKNOWN_OFFSET
    broker_epoch: int | None = None
    """The broker epoch its last fetch was sent in (-1: a fetch older than v15 does not say;
    None: no fetch yet)."""

    def update(
        self, *, fetch_offset: int, leader_log_end_offset: int, now_ms: int, broker_epoch: int
    ) -> None:
        self.broker_epoch = broker_epoch
        if fetch_offset >= leader_log_end_offset:
            self.last_caught_up_ms = max(self.last_caught_up_ms, now_ms)
        elif fetch_offset >= self.last_fetch_leader_log_end_offset >= 0:
            self.last_caught_up_ms = max(self.last_caught_up_ms, self.last_fetch_ms)
        self.log_end_offset = fetch_offset
        self.last_fetch_leader_log_end_offset = leader_log_end_offset
        self.last_fetch_ms = now_ms

    def epoch_eligible(self, registered_epoch: int) -> bool:
        """Kafka's ``isBrokerEpochIsrEligible``: it fetched, in the epoch its broker is
        registered in now (or in a fetch version that does not say)."""
        return self.broker_epoch is not None and self.broker_epoch in (-1, registered_epoch)

    def caught_up(self, *, leader_log_end_offset: int, now_ms: int, max_lag_ms: int) -> bool:
        return (
            self.log_end_offset >= leader_log_end_offset >= 0
            or now_ms - self.last_caught_up_ms <= max_lag_ms
        )


@dataclass(frozen=True, slots=True)
class IsrChange:
    """An AlterPartition to send: the new ISR, based on ``partition_epoch``, with the broker
    epoch each follower in it last fetched in (-1 where unknown, and for the leader, whose
    sender knows its own)."""

    isr: tuple[int, ...]
    partition_epoch: int
    added: tuple[int, ...] = ()
    removed: tuple[int, ...] = ()
    broker_epochs: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class AckState:
    """Whether an acks=all append at some offset is done, and with which error."""

    done: bool
    error: ErrorCode = ErrorCode.none


@dataclass
class PartitionReplication:
    """The leader's bookkeeping of one partition in one leader epoch."""

    leader_id: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader_epoch: int
    partition_epoch: int
    leader_epoch_start_offset: int
    max_lag_ms: int
    started_ms: int = 0
    """When this broker became leader: the ISR's followers count as caught up then, as in
    Kafka's ``Replica.resetReplicaState``."""
    followers: dict[int, FollowerState] = field(default_factory=dict)
    pending: IsrChange | None = None
    """The AlterPartition in flight, if any."""

    def __post_init__(self) -> None:
        for broker_id in self.replicas:
            if broker_id != self.leader_id and broker_id not in self.followers:
                caught_up = self.started_ms if broker_id in self.isr else NEVER
                self.followers[broker_id] = FollowerState(broker_id, last_caught_up_ms=caught_up)

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        """The ISR as acks and the high watermark count it: an expansion in flight counts."""
        if self.pending is not None and self.pending.added:
            return tuple(sorted(set(self.isr) | set(self.pending.added)))
        return self.isr

    # --- followers -------------------------------------------------------------------------

    def record_fetch(
        self,
        broker_id: int,
        *,
        fetch_offset: int,
        leader_log_end_offset: int,
        now_ms: int,
        broker_epoch: int = -1,
    ) -> None:
        """A follower fetched from ``fetch_offset`` (in ``broker_epoch``): it has everything
        below."""
        self.followers[broker_id].update(
            fetch_offset=fetch_offset,
            leader_log_end_offset=leader_log_end_offset,
            now_ms=now_ms,
            broker_epoch=broker_epoch,
        )

    def high_watermark_candidate(
        self,
        leader_log_end_offset: int,
        *,
        now_ms: int,
        min_isr: int = 1,
        eligible: Mapping[int, int] | None = None,
    ) -> int | None:
        """What every counted replica has: where the high watermark may move up to.

        A caught-up follower outside the maximal ISR counts only while its broker is
        ``eligible`` (broker id to its registered epoch, as for :meth:`isr_change`; None: every
        broker is): a fenced broker, which the controller took out of the ISR, holds nothing
        back (Kafka's ``shouldWaitForReplicaToJoinIsr``).

        None while the ISR is smaller than ``min_isr`` (the topic's ``min.insync.replicas``, at
        most the replica count): KIP-966's strict min ISR, which is what lets a replica that
        leaves such an ISR stay an eligible leader (it holds every committed record)."""
        candidate = leader_log_end_offset
        if not self.followers:  # one replica: the hot path of a single broker
            return candidate
        if self.under_min_isr(min_isr):
            return None
        maximal = set(self.maximal_isr)
        for follower in self.followers.values():
            counted = follower.broker_id in maximal or (
                follower.caught_up(
                    leader_log_end_offset=leader_log_end_offset,
                    now_ms=now_ms,
                    max_lag_ms=self.max_lag_ms,
                )
                and (eligible is None or self._eligible(follower, eligible))
            )
            if counted:
                candidate = min(candidate, max(follower.log_end_offset, 0))
        return candidate

    # --- ISR -------------------------------------------------------------------------------

    def isr_change(
        self,
        leader_log_end_offset: int,
        *,
        high_watermark: int,
        now_ms: int,
        eligible: Mapping[int, int],
    ) -> IsrChange | None:
        """The AlterPartition to send now, if the ISR should change and none is in flight:
        a shrink of the followers out of sync, else the first follower back in sync (at
        ``high_watermark``, the log's) whose broker is ``eligible`` (broker id to its
        registered epoch) in the epoch it fetched in."""
        if self.pending is not None:
            return None
        out_of_sync = tuple(
            broker_id
            for broker_id in self.isr
            if broker_id != self.leader_id
            and not self.followers[broker_id].caught_up(
                leader_log_end_offset=leader_log_end_offset,
                now_ms=now_ms,
                max_lag_ms=self.max_lag_ms,
            )
        )
        if out_of_sync:
            kept = tuple(b for b in self.isr if b not in out_of_sync)
            self.pending = self._change(kept, removed=out_of_sync)
            return self.pending
        for broker_id in sorted(self.followers):
            follower = self.followers[broker_id]
            if (
                broker_id not in self.isr
                and self._eligible(follower, eligible)
                and self._in_sync(follower, high_watermark)
            ):
                joined = tuple(sorted((*self.isr, broker_id)))
                self.pending = self._change(joined, added=(broker_id,))
                return self.pending
        return None

    def _change(
        self, isr: tuple[int, ...], *, added: tuple[int, ...] = (), removed: tuple[int, ...] = ()
    ) -> IsrChange:
        epochs = []
        for broker_id in isr:
            follower = self.followers.get(broker_id)
            known = None if follower is None else follower.broker_epoch
            epochs.append(-1 if known is None else known)
        return IsrChange(isr, self.partition_epoch, added, removed, tuple(epochs))

    @staticmethod
    def _eligible(follower: FollowerState, eligible: Mapping[int, int]) -> bool:
        """Kafka's ``isReplicaIsrEligible``: its broker is registered, unfenced and not
        shutting down, and the follower fetched in the epoch it is registered in now."""
        epoch = eligible.get(follower.broker_id)
        return epoch is not None and follower.epoch_eligible(epoch)

    def _in_sync(self, follower: FollowerState, high_watermark: int) -> bool:
        """Kafka's ``isFollowerInSync``: at the high watermark, and into the current epoch."""
        return (
            follower.log_end_offset >= high_watermark
            and follower.log_end_offset >= self.leader_epoch_start_offset
        )

    def isr_committed(self, isr: Iterable[int], partition_epoch: int) -> None:
        """The controller answered the pending AlterPartition (or the metadata showed a newer
        partition state): take its ISR and epoch."""
        self.isr = tuple(sorted(isr))
        self.partition_epoch = partition_epoch
        self.pending = None

    def reassigned(self, replicas: tuple[int, ...]) -> None:
        """The replica set changed (a reassignment): new followers start unknown, followers
        no longer assigned are forgotten, and so is a pending change that names one (the
        controller refuses an ISR outside the replicas: it can never commit)."""
        self.replicas = replicas
        if self.pending is not None and not set(self.pending.isr) <= set(replicas):
            self.pending = None
        for broker_id in replicas:
            if broker_id != self.leader_id and broker_id not in self.followers:
                self.followers[broker_id] = FollowerState(broker_id)
        for broker_id in [b for b in self.followers if b not in replicas]:
            del self.followers[broker_id]

    def forget_follower(self, broker_id: int) -> None:
        """The follower's broker started a new session: nothing its earlier fetches said
        holds any more (it rejoins the ISR only from fetches of the new one)."""
        if broker_id in self.followers:
            self.followers[broker_id] = FollowerState(broker_id)

    def isr_change_failed(self, change: IsrChange, error: ErrorCode | None) -> bool:
        """The AlterPartition of ``change`` got no answer (``error`` None: a timeout, a lost
        connection) or was refused with ``error``. Whether to send it again.

        Only an answer that says the change was not applied (:data:`NOT_APPLIED`) drops it:
        after any other the controller may have committed it, so the maximal ISR must keep
        counting the replica it adds (Kafka's ``handleAlterPartitionError``). It is sent again
        until an answer comes, except after :data:`AWAIT_METADATA` errors, which say that the
        partition moved on: the metadata then brings its new state (:meth:`isr_committed`)."""
        if self.pending is not change:
            return False  # resolved meanwhile (the metadata showed a newer partition state)
        if error in NOT_APPLIED:
            self.pending = None
            return False
        return error not in AWAIT_METADATA

    # --- acks ------------------------------------------------------------------------------

    def under_min_isr(self, min_insync_replicas: int) -> bool:
        """Is the ISR smaller than ``min.insync.replicas``, taken at most as the replica count
        (Kafka's effective min ISR)? An acks=all append is refused then (NOT_ENOUGH_REPLICAS)."""
        return len(self.isr) < min(min_insync_replicas, len(self.replicas))

    def ack_state(
        self, required_offset: int, *, high_watermark: int, min_insync_replicas: int
    ) -> AckState:
        """An acks=all append whose last offset is ``required_offset - 1``: done once the high
        watermark reaches ``required_offset``; NOT_ENOUGH_REPLICAS_AFTER_APPEND as soon as the
        ISR shrinks below ``min.insync.replicas`` (the high watermark cannot move then)."""
        if len(self.maximal_isr) < min(min_insync_replicas, len(self.replicas)):
            return AckState(done=True, error=ErrorCode.not_enough_replicas_after_append)
        if high_watermark < required_offset:
            return AckState(done=False)
        return AckState(done=True)
