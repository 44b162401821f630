"""The follower's side of Fetch and FetchSnapshot: its poll, and what it does with the answers
(append, truncate to a diverging epoch, load a snapshot, move the high watermark)."""

from __future__ import annotations

import logging
from typing import Any

from kio.schema.errors import ErrorCode

from strom.raft import elections, messages, transitions
from strom.raft.batches import iter_batches
from strom.raft.log import OffsetAndEpoch
from strom.raft.node import QuorumNode
from strom.raft.quorum_state import ElectionState, Role, Trigger
from strom.raft.snapshot_transfer import SnapshotDownload
from strom.raft.snapshots import SnapshotReader

log = logging.getLogger(__name__)


def poll_follower(node: QuorumNode, now: int) -> None:
    leader_id = node.election.leader_id
    assert leader_id is not None
    if node.prospect is not None:
        elections.poll_prospect(node, node.prospect, now)
        if node.role is not Role.FOLLOWER:
            return
    if now >= node.fetch_deadline:
        if node.is_voter:
            log.info("node %d: leader %d silent; standing for election", node.node_id, leader_id)
            transitions.become_candidate(node, now, trigger=Trigger.FETCH_TIMEOUT)
        else:
            transitions.transition(node, Trigger.ELECTION_TIMEOUT, ElectionState(node.epoch))
        return
    if not node.requests.ready(leader_id, now):
        return
    if node.snapshot_fetch is not None:
        fetching = node.snapshot_fetch
        request = messages.fetch_snapshot(
            node.cluster_id,
            node.node_id,
            node.epoch,
            fetching.snapshot,
            position=len(fetching.data),
            max_bytes=node.config.snapshot_chunk_bytes,
        )
        node.send(leader_id, request, now)
    elif node.log.flushed_end_offset >= node.log.end_offset:
        node.send(leader_id, node.fetch_request(), now)


def on_fetch_answer(node: QuorumNode, source: int, body: Any, now: int) -> None:
    part = body.responses[0].partitions[0]
    leader_id = int(part.current_leader.leader_id)
    leader_epoch = int(part.current_leader.leader_epoch)
    error = ErrorCode(part.error_code)
    if error is not ErrorCode.none:
        transitions.on_epoch(node, leader_epoch, leader_id, now)
        node.requests.back_off(source, now)
        return
    # A fetch answered without error comes from the leader of ``leader_epoch`` (a bootstrap
    # server, which has a negative id here, is the leader its answer names).
    transitions.on_epoch(node, leader_epoch, source if source >= 0 else leader_id, now)
    if (
        node.role is not Role.FOLLOWER
        or node.election.leader_id != source
        or leader_epoch != node.epoch
    ):
        return
    node.fetch_deadline = now + node.config.fetch_timeout_ms
    node.prospect = None  # the leader answers: its connection only flapped
    if int(part.snapshot_id.end_offset) >= 0:
        snapshot = OffsetAndEpoch(int(part.snapshot_id.end_offset), int(part.snapshot_id.epoch))
        node.snapshot_fetch = SnapshotDownload(snapshot)
        return
    if int(part.diverging_epoch.end_offset) >= 0:
        truncate(
            node,
            OffsetAndEpoch(int(part.diverging_epoch.end_offset), int(part.diverging_epoch.epoch)),
        )
        return
    records = part.records
    if records:
        append_fetched(node, bytes(records))
    high_watermark = int(part.high_watermark)
    if high_watermark >= 0 and (
        node.high_watermark is None or high_watermark > node.high_watermark
    ):
        node.high_watermark = high_watermark


def truncate(node: QuorumNode, diverging: OffsetAndEpoch) -> None:
    local = node.log.end_offset_for_epoch(diverging.epoch)
    offset = min(diverging.offset, local.offset) if local.epoch >= 0 else diverging.offset
    offset = max(offset, node.log.start_offset)
    log.info(
        "node %d truncates its log to offset %d (diverged at epoch %d)",
        node.node_id,
        offset,
        diverging.epoch,
    )
    node.log.truncate_to(offset)
    node.voter_history.truncate_to(node.log.end_offset)
    node.refresh_voters()


def append_fetched(node: QuorumNode, data: bytes) -> None:
    view = memoryview(data)
    position = 0
    for batch in iter_batches(view):
        end = position + batch.size
        if batch.base_offset == node.log.end_offset:
            node.note_batch(node.log.append(bytes(view[position:end])))
        elif batch.base_offset > node.log.end_offset:
            break  # a gap: a stale answer; the next fetch asks from the log end again
        position = end
    node.refresh_voters()


def on_snapshot_answer(node: QuorumNode, source: int, body: Any, now: int) -> None:
    part = body.topics[0].partitions[0]
    fetching = node.snapshot_fetch
    transitions.on_epoch(
        node, int(part.current_leader.leader_epoch), int(part.current_leader.leader_id), now
    )
    if fetching is None or node.snapshot_fetch is not fetching:
        return
    if part.error_code != ErrorCode.none:
        log.warning(
            "node %d: snapshot fetch refused: %s", node.node_id, ErrorCode(part.error_code).name
        )
        node.snapshot_fetch = None
        node.requests.back_off(source, now)
        return
    node.fetch_deadline = now + node.config.fetch_timeout_ms
    if not fetching.add(part):
        return
    snapshot = fetching.snapshot
    node.snapshot_fetch = None
    reader = SnapshotReader(snapshot, bytes(fetching.data))  # refuses an incomplete one
    node.log.store_snapshot(snapshot, bytes(fetching.data))
    node.log.reset_to_snapshot(snapshot)
    node.voter_history.reset(reader.voters)
    node.refresh_voters()
    if node.high_watermark is None or node.high_watermark < snapshot.offset:
        node.high_watermark = snapshot.offset
    log.info(
        "node %d loaded snapshot %d-%d from the leader",
        node.node_id,
        snapshot.offset,
        snapshot.epoch,
    )


def request_failed(node: QuorumNode, peer: int, now: int) -> None:
    """A request to ``peer`` failed or timed out."""
    if node.role is Role.FOLLOWER and not node.is_voter and peer == node.election.leader_id:
        # An observer that cannot reach the leader looks for the current one again.
        node.fetch_deadline = min(node.fetch_deadline, now)
