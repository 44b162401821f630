"""What a leader knows of its epoch: every replica's progress, the high watermark, check quorum
(Kafka's ``LeaderState``).

The high watermark is the largest offset that a majority of voters has (the leader counting
only what it has flushed), and it moves only once that offset lies past the leader's epoch start
offset: a record of the current epoch must be on a majority before anything, older records
included, counts as committed (Raft's rule; committing an older epoch's record by counting
replicas alone could be undone). It never moves back.

Check quorum: a leader that a majority of voters (itself included) has not fetched from within
1.5 times the fetch timeout may be cut off from the quorum and resigns, so that a partitioned
leader stops acting as one.

The voters may change while it leads (KIP-853): :meth:`set_voters` takes the new set as soon as
its record is appended; a leader that removed itself counts only the others towards the high
watermark (and resigns once the removal is committed, the client's part).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LeaderState", "ReplicaState"]


@dataclass(slots=True)
class ReplicaState:
    node_id: int
    end_offset: int = -1
    """What the replica has: everything below this offset (its fetch offset)."""
    last_fetch_ms: int = -1
    """Wall-clock time of its last fetch."""
    last_caught_up_ms: int = -1
    """Wall-clock time it last fetched from at or past the leader's end offset."""


class LeaderState:
    def __init__(
        self,
        *,
        node_id: int,
        epoch: int,
        epoch_start_offset: int,
        voters: frozenset[int],
        high_watermark: int | None,
        now_ms: int,
        check_quorum_ms: int,
    ) -> None:
        self.node_id = node_id
        self.epoch = epoch
        self.epoch_start_offset = epoch_start_offset
        self.local = ReplicaState(node_id)
        self.voters: dict[int, ReplicaState] = {}
        self.observers: dict[int, ReplicaState] = {}
        self.high_watermark = high_watermark
        self.acknowledged: set[int] = {node_id}
        """Voters that know this leader (answered BeginQuorumEpoch or fetched)."""
        self._check_quorum_ms = check_quorum_ms
        self.check_quorum_deadline_ms = now_ms + check_quorum_ms
        self._fetched_since_check: set[int] = set()
        self.set_voters(voters, now_ms)

    def set_voters(self, voters: frozenset[int], now_ms: int) -> bool:
        """The voter set changed: replicas move between voters and observers, keeping what
        they fetched; the high watermark may move (never back); check quorum starts over."""
        everyone = {**self.observers, **self.voters, self.node_id: self.local}
        self.voters = {v: everyone.get(v) or ReplicaState(v) for v in sorted(voters)}
        self.observers = {
            n: r for n, r in everyone.items() if n not in voters and n != self.node_id
        }
        self.acknowledged &= voters | {self.node_id}
        self._fetched_since_check = {self.node_id} & voters
        self.check_quorum_deadline_ms = now_ms + self._check_quorum_ms
        return self._advance()

    @property
    def majority(self) -> int:
        return len(self.voters) // 2 + 1

    def update_local(self, flushed_end_offset: int, wall_ms: int) -> bool:
        """The leader's own progress; True when the high watermark moved."""
        own = self.local
        own.end_offset = max(own.end_offset, flushed_end_offset)
        own.last_fetch_ms = own.last_caught_up_ms = wall_ms
        return self._advance()

    def update_replica(
        self, node_id: int, fetch_offset: int, *, leader_end_offset: int, wall_ms: int, now_ms: int
    ) -> bool:
        """A replica fetched from ``fetch_offset``; True when the high watermark moved."""
        if node_id == self.node_id:
            return False
        replica = self.voters.get(node_id)
        if replica is None:
            replica = self.observers.setdefault(node_id, ReplicaState(node_id))
        else:
            self.acknowledged.add(node_id)
            self._fetched_since_check.add(node_id)
            if len(self._fetched_since_check) >= self.majority:
                self.check_quorum_deadline_ms = now_ms + self._check_quorum_ms
                self._fetched_since_check = {self.node_id} & self.voters.keys()
        replica.end_offset = fetch_offset
        replica.last_fetch_ms = wall_ms
        if fetch_offset >= leader_end_offset:
            replica.last_caught_up_ms = wall_ms
        return node_id in self.voters and self._advance()

    @property
    def check_quorum_due_ms(self) -> int | None:
        """When a majority must have fetched again; None for a lone voter, which has no one
        to hear from (its poll must not wake for a deadline that never moves)."""
        alone = self.voters.keys() == {self.node_id}
        return None if alone else self.check_quorum_deadline_ms

    def check_quorum_failed(self, now_ms: int) -> bool:
        due = self.check_quorum_due_ms
        return due is not None and now_ms >= due

    def _advance(self) -> bool:
        if not self.voters:
            return False
        offsets = sorted((replica.end_offset for replica in self.voters.values()), reverse=True)
        candidate = offsets[self.majority - 1]
        if candidate <= self.epoch_start_offset:
            return False
        if self.high_watermark is not None and candidate <= self.high_watermark:
            return False
        self.high_watermark = candidate
        return True

    def successors(self) -> list[int]:
        """The other voters, most caught up first (EndQuorumEpoch's preferred successors)."""
        others = [r for r in self.voters.values() if r.node_id != self.node_id]
        return [r.node_id for r in sorted(others, key=lambda r: -r.end_offset)]
