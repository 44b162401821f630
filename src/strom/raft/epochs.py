"""BeginQuorumEpoch (a new leader makes itself known) and EndQuorumEpoch (a resigned leader asks
its preferred successors to stand), on both sides."""

from __future__ import annotations

import logging
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from strom.raft import messages, transitions
from strom.raft.node import QuorumNode
from strom.raft.quorum_state import ElectionState, Role, Trigger

log = logging.getLogger(__name__)


def poll_resigned(node: QuorumNode, now: int) -> None:
    if now >= node.election_deadline and not node.shutting_down:
        if node.is_voter:
            transitions.become_candidate(node, now, trigger=Trigger.ELECTION_TIMEOUT)
        else:  # removed from the voters: an observer now, which looks for the leader
            transitions.transition(node, Trigger.LEFT_VOTERS, ElectionState(node.epoch))
        return
    request = messages.end_quorum_epoch(node.cluster_id, node.node_id, node.epoch, node.successors)
    node.send_to_each(node.voters - node.acknowledged, request, now)


def _asked(body: Any) -> tuple[Any, int, int]:
    """A BeginQuorumEpoch or EndQuorumEpoch request's partition, its leader and epoch."""
    part = body.topics[0].partitions[0]
    return part, int(part.leader_id), int(part.leader_epoch)


def on_begin(node: QuorumNode, body: Any, now: int) -> ResponsePayload:
    _, leader_id, epoch = _asked(body)
    error = ErrorCode.none
    if epoch < node.epoch:
        error = ErrorCode.fenced_leader_epoch
    elif leader_id == node.node_id or (
        leader_id not in node.voters and not node.voter_history.dynamic
    ):
        # With dynamic voters this node may not have the record that added the leader yet.
        error = ErrorCode.inconsistent_voter_set
    elif not (node.role is Role.FOLLOWER and node.election.leader_id == leader_id):
        if epoch == node.epoch and node.role in (Role.LEADER, Role.RESIGNED):
            error = ErrorCode.inconsistent_voter_set  # two leaders of one epoch: never
        else:
            transitions.become_follower(node, epoch, leader_id, now)
    return messages.begin_answer(error, node.leader_and_epoch)


def on_end(node: QuorumNode, body: Any, now: int) -> ResponsePayload:
    part, leader_id, epoch = _asked(body)
    error = ErrorCode.none
    if epoch < node.epoch:
        error = ErrorCode.fenced_leader_epoch
    elif epoch > node.epoch:
        transitions.become_unattached(node, epoch, now)
    elif node.role is Role.FOLLOWER and node.election.leader_id == leader_id:
        # The leader resigns: its preferred successors stand first, the others a bit later.
        successors = [int(s) for s in part.preferred_successors]
        position = successors.index(node.node_id) if node.node_id in successors else None
        if position == 0:
            backoff = 0
        else:
            backoff = node.random.randrange(max(node.config.election_backoff_max_ms, 1))
        node.fetch_deadline = min(node.fetch_deadline, now + backoff)
    return messages.end_answer(error, node.leader_and_epoch)


def on_begin_answer(node: QuorumNode, source: int, body: Any, now: int) -> None:
    part = transitions.answer_partition(node, body, now)
    if part is None:
        return
    if node.leader_state is not None and part.error_code == ErrorCode.none:
        node.leader_state.acknowledged.add(source)


def on_end_answer(node: QuorumNode, source: int, body: Any, now: int) -> None:
    part = transitions.answer_partition(node, body, now)
    if part is None:
        return
    if node.role is Role.RESIGNED:
        node.acknowledged.add(source)
