"""The roles and the moves between them: every change of role goes through :func:`transition`,
which names its ``Trigger`` (``quorum_state.TRANSITIONS`` says which are allowed), writes the
election state before acting on it, and clears what belonged to the role left behind."""

from __future__ import annotations

import logging
from typing import Any

from kio.schema.errors import ErrorCode

from strom.raft.batches import ControlType, control_batch, leader_change
from strom.raft.leader_state import LeaderState
from strom.raft.node import NO_TIMEOUT, QuorumNode
from strom.raft.quorum_state import ElectionState, Role, Trigger, next_role
from strom.raft.voters import kraft_version_record

log = logging.getLogger(__name__)


def transition(node: QuorumNode, trigger: Trigger, election: ElectionState) -> None:
    role = next_role(node.role, trigger)
    if election != node.election:
        node.store.write(election, node.voters)
    previous = node.role
    node.role, node.election = role, election
    node.requests.reset()
    node.leader_state = None
    node.votes = {}
    node.acknowledged = set()
    node.snapshot_fetch = None
    node.prospect = None
    node.backoff_deadline = None
    node.fetch_deadline = NO_TIMEOUT
    node.election_deadline = NO_TIMEOUT
    if node.pending_change is not None and role is not Role.LEADER:
        node.answer_change(ErrorCode.not_leader_or_follower, "the leader changed")
    if node.parked and role is not Role.LEADER:
        # A leader's parked fetches are answered when it stops leading (not the leader, and
        # who is), as Kafka's purgatory completes them: left parked, their fetchers would
        # wait out their timeouts, and their passed deadlines would keep the poll awake.
        node.complete_parked(node.clock.monotonic_ms())
    log.debug(
        "node %d: %s -> %s (%s), epoch %d, leader %s",
        node.node_id,
        previous.value,
        role.value,
        trigger.name,
        election.epoch,
        election.leader_id,
    )


def become_unattached(node: QuorumNode, epoch: int, now: int) -> None:
    # As Raft says, only a granted vote or a live leader resets the election timer: seeing a
    # newer epoch does not, so a candidate whose log is behind cannot keep the others from
    # ever standing by bumping the epoch over and over.
    running = min(node.election_deadline, node.backoff_deadline or NO_TIMEOUT)
    transition(node, Trigger.HIGHER_EPOCH, ElectionState(epoch))
    fresh = now + node.election_timeout()
    node.election_deadline = running if running != NO_TIMEOUT else fresh


def become_follower(node: QuorumNode, epoch: int, leader_id: int, now: int) -> None:
    voted = node.election.voted_id if epoch == node.epoch else None
    transition(node, Trigger.LEADER_KNOWN, ElectionState(epoch, leader_id, voted))
    node.fetch_deadline = now + node.config.fetch_timeout_ms
    node.failed_elections = 0
    log.info("node %d follows leader %d in epoch %d", node.node_id, leader_id, epoch)


def become_candidate(node: QuorumNode, now: int, *, trigger: Trigger) -> None:
    if not node.is_voter:
        return
    transition(node, trigger, ElectionState(node.epoch + 1, None, node.node_id))
    node.votes = {node.node_id: True} if node.node_id in node.voters else {}
    node.election_deadline = now + node.election_timeout()
    log.info("node %d stands for election in epoch %d", node.node_id, node.epoch)
    maybe_won(node, now)


def maybe_won(node: QuorumNode, now: int) -> None:
    granted = sum(1 for voter, vote in node.votes.items() if vote and voter in node.voters)
    if granted >= len(node.voters) // 2 + 1:
        become_leader(node, now)


def become_leader(node: QuorumNode, now: int) -> None:
    granting = sorted(voter for voter, vote in node.votes.items() if vote)
    transition(node, Trigger.WON_ELECTION, ElectionState(node.epoch, node.node_id, node.node_id))
    node.failed_elections = 0
    start = node.log.end_offset
    node.log.append(
        control_batch(
            ControlType.LEADER_CHANGE,
            leader_change(node.node_id, sorted(node.voters), granting),
            base_offset=start,
            epoch=node.epoch,
            timestamp=node.clock.now_ms(),
        )
    )
    node.leader_state = LeaderState(
        node_id=node.node_id,
        epoch=node.epoch,
        epoch_start_offset=start,
        voters=node.voter_ids(node.voter_history.at(node.log.flushed_end_offset)),
        high_watermark=node.high_watermark,
        now_ms=now,
        check_quorum_ms=node.config.fetch_timeout_ms * 3 // 2,
    )
    history = node.voter_history
    if history.dynamic and history.last_change_offset is None and node.log.start_offset == 0:
        # The voters come from the bootstrap snapshot only: put them in the log, where
        # observers replicating from the start find them (Kafka does the same).
        node.log.append(
            control_batch(
                ControlType.KRAFT_VERSION,
                kraft_version_record(1),
                base_offset=node.log.end_offset,
                epoch=node.epoch,
                timestamp=node.clock.now_ms(),
            )
        )
        node.append_voters(history.latest(), now)
    log.info("node %d leads epoch %d from offset %d", node.node_id, node.epoch, start)


def resign(node: QuorumNode) -> None:
    successors = node.leader_state.successors() if node.leader_state is not None else []
    transition(node, Trigger.RESIGN, node.election)
    node.successors = successors
    node.acknowledged = {node.node_id}
    node.election_deadline = node.clock.monotonic_ms() + node.election_timeout()
    log.info("node %d resigns as leader of epoch %d", node.node_id, node.epoch)


def answer_partition(node: QuorumNode, body: Any, now: int) -> Any | None:
    """The partition of a Vote, BeginQuorumEpoch or EndQuorumEpoch answer, or None when the
    epoch and leader it names moved this node (the answer is stale then)."""
    part = body.topics[0].partitions[0]
    if on_epoch(node, int(part.leader_epoch), int(part.leader_id), now):
        return None
    return part


def on_epoch(node: QuorumNode, epoch: int, leader_id: int | None, now: int) -> bool:
    """Catch up with what a message says of the epoch and its leader; True when the node
    moved (its requests are forgotten then)."""
    if leader_id is not None and leader_id < 0:
        leader_id = None
    if epoch > node.epoch:
        if leader_id is not None and leader_id != node.node_id:
            become_follower(node, epoch, leader_id, now)
        else:
            become_unattached(node, epoch, now)
        return True
    if (
        epoch == node.epoch
        and leader_id is not None
        and leader_id != node.node_id
        and node.role in (Role.UNATTACHED, Role.CANDIDATE)
    ):
        become_follower(node, epoch, leader_id, now)
        return True
    return False


def lost_election(node: QuorumNode, now: int) -> None:
    node.failed_elections += 1
    cap = min(
        node.config.election_backoff_max_ms,
        node.config.retry_backoff_ms * 2 ** min(node.failed_elections, 16),
    )
    node.backoff_deadline = now + node.random.randrange(max(cap, 1))
    node.requests.reset()
