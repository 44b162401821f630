"""Elections: Vote and its pre-vote round (KIP-996) on both sides, the unattached voter's and
the candidate's poll, and what a closed connection means for them (``pre_vote``)."""

from __future__ import annotations

import logging
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from strom.raft import messages, transitions
from strom.raft.log import OffsetAndEpoch
from strom.raft.node import QuorumNode
from strom.raft.pre_vote import Prospect
from strom.raft.quorum_state import ElectionState, Role, Trigger

log = logging.getLogger(__name__)


def poll_unattached(node: QuorumNode, now: int) -> None:
    if node.is_voter:
        if now >= node.election_deadline:
            transitions.become_candidate(node, now, trigger=Trigger.ELECTION_TIMEOUT)
        return
    # An observer asks a voter to find out who leads (a fetch answered with the leader).
    targets = node.voters or node.bootstrap
    candidates = sorted(v for v in targets if node.requests.ready(v, now))
    if candidates and not any(not node.requests.ready(v, now) for v in targets):
        target = candidates[node.random.randrange(len(candidates))]
        node.send(target, node.fetch_request(), now)


def poll_candidate(node: QuorumNode, now: int) -> None:
    if node.backoff_deadline is not None:
        if now >= node.backoff_deadline:
            transitions.become_candidate(node, now, trigger=Trigger.ELECTION_TIMEOUT)
        return
    if now >= node.election_deadline:
        transitions.lost_election(node, now)
        return
    request = messages.vote(node.cluster_id, node.node_id, node.epoch, node.log_end())
    node.send_to_each(node.voters - node.votes.keys(), request, now)


def poll_prospect(node: QuorumNode, prospect: Prospect, now: int) -> None:
    """Ask for pre-votes once the round starts; stand for election on a majority."""
    if prospect.lost or now < prospect.start_ms:
        return
    prospect.grants[node.node_id] = True
    outcome = prospect.outcome(node.voters)
    if outcome:
        log.info(
            "node %d: the connection to leader %d closed and a majority granted pre-votes; "
            "standing for election",
            node.node_id,
            prospect.leader_id,
        )
        transitions.become_candidate(node, now, trigger=Trigger.FETCH_TIMEOUT)
        return
    if outcome is False:
        prospect.lost = True
        return
    request = messages.pre_vote(node.cluster_id, node.node_id, node.epoch + 1, node.log_end())
    node.send_to_each(node.voters - prospect.grants.keys() - {prospect.leader_id}, request, now)


def on_vote(node: QuorumNode, body: Any, now: int) -> ResponsePayload:
    part = body.topics[0].partitions[0]
    candidate, epoch = int(part.replica_id), int(part.replica_epoch)
    if candidate not in node.voters and not node.voter_history.dynamic:
        # With dynamic voters (KIP-853) any candidate is heard: this node's set may lag
        # behind the candidate's, or the candidate is a removed voter whose removal is not
        # committed yet and that may be needed to commit it; the log check below decides.
        return messages.vote_answer(
            ErrorCode.inconsistent_voter_set, node.leader_and_epoch, granted=False
        )
    if epoch < node.epoch:
        return messages.vote_answer(
            ErrorCode.fenced_leader_epoch, node.leader_and_epoch, granted=False
        )
    if epoch > node.epoch:
        transitions.become_unattached(node, epoch, now)
    granted = False
    # A node that is not a voter by its own log grants votes too (KIP-853): the candidate
    # may hold the record that makes it the voter whose vote elects the next leader.
    if node.role is Role.UNATTACHED:
        voted = node.election.voted_id
        ours = OffsetAndEpoch(node.log.end_offset, node.log.last_epoch)
        theirs = OffsetAndEpoch(int(part.last_offset), int(part.last_offset_epoch))
        up_to_date = (theirs.epoch, theirs.offset) >= (ours.epoch, ours.offset)
        if (voted is None or voted == candidate) and up_to_date:
            granted = True
            if voted is None:
                transitions.transition(
                    node, Trigger.GRANT_VOTE, ElectionState(node.epoch, None, candidate)
                )
            node.election_deadline = now + node.election_timeout()
    return messages.vote_answer(ErrorCode.none, node.leader_and_epoch, granted=granted)


def on_pre_vote(node: QuorumNode, body: Any, now: int) -> ResponsePayload:
    """Grant a pre-vote to a voter whose log is up to date for an epoch newer than this
    node's, unless this node leads or has heard from its leader within the fetch timeout
    (and not seen its connection close). Changes nothing here."""
    part = body.topics[0].partitions[0]
    epoch = int(part.replica_epoch)
    ours = (node.log.last_epoch, node.log.end_offset)
    theirs = (int(part.last_offset_epoch), int(part.last_offset))
    if node.role is Role.LEADER:
        leader_alive = True
    elif node.role is Role.FOLLOWER:
        leader_alive = node.prospect is None and now < node.fetch_deadline
    else:
        leader_alive = False
    granted = (
        int(part.replica_id) in node.voters
        and epoch > node.epoch
        and theirs >= ours
        and not leader_alive
    )
    return messages.vote_answer(ErrorCode.none, node.leader_and_epoch, granted=granted)


def on_vote_answer(node: QuorumNode, source: int, body: Any, now: int) -> None:
    part = transitions.answer_partition(node, body, now)
    if part is None:
        return
    if node.role is not Role.CANDIDATE or int(part.leader_epoch) != node.epoch:
        return
    if part.error_code != ErrorCode.none:
        node.requests.back_off(source, now)
        return
    node.votes[source] = bool(part.vote_granted)
    rejected = sum(1 for voter, vote in node.votes.items() if not vote and voter in node.voters)
    if rejected > len(node.voters) - (len(node.voters) // 2 + 1):
        transitions.lost_election(node, now)
    else:
        transitions.maybe_won(node, now)


def on_pre_vote_answer(node: QuorumNode, source: int, body: Any, now: int) -> None:
    part = transitions.answer_partition(node, body, now)
    if part is None:
        return
    if node.prospect is not None and part.error_code == ErrorCode.none:
        node.prospect.grants[source] = bool(part.vote_granted)


def connection_closed(node: QuorumNode, peer: int) -> None:
    """The connection to ``peer`` closed (its process is gone, or it closed it). A voter
    following ``peer`` runs a pre-vote round after a short random delay (``pre_vote``); a
    candidate counts ``peer`` against its election (losing early is safe: it backs off and
    stands again)."""
    if node.role is Role.CANDIDATE and peer in node.voters and peer not in node.votes:
        node.votes[peer] = False
        rejected = sum(1 for voter, vote in node.votes.items() if not vote)
        if rejected > len(node.voters) - (len(node.voters) // 2 + 1):
            transitions.lost_election(node, node.clock.monotonic_ms())
        return
    if (
        node.role is Role.FOLLOWER
        and node.is_voter
        and peer == node.election.leader_id
        and node.prospect is None
    ):
        delay = node.random.randrange(max(node.config.closed_leader_delay_max_ms, 1))
        node.prospect = Prospect(peer, node.clock.monotonic_ms() + delay)
