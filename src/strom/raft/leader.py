"""The leader's poll (check quorum, the high watermark, BeginQuorumEpoch, parked fetches) and its
side of Fetch: divergence, snapshots, parking a fetch with nothing to read."""

from __future__ import annotations

import logging
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from strom.raft import membership, messages, transitions
from strom.raft.channel import InboundRequest
from strom.raft.log import OffsetAndEpoch
from strom.raft.messages import METADATA_TOPIC
from strom.raft.node import ParkedFetch, QuorumNode
from strom.raft.quorum_state import Role

log = logging.getLogger(__name__)


def poll_leader(node: QuorumNode, now: int) -> None:
    leader = node.leader_state
    assert leader is not None
    if node.shutting_down:
        transitions.resign(node)
        return
    if leader.check_quorum_failed(now):
        log.warning(
            "node %d: no majority fetched in %d ms; resigning as leader of epoch %d",
            node.node_id,
            node.config.fetch_timeout_ms * 3 // 2,
            node.epoch,
        )
        transitions.resign(node)
        return
    membership.leader_voters(node, leader, now)
    if leader.update_local(node.log.flushed_end_offset, node.clock.now_ms()):
        node.high_watermark = leader.high_watermark
    membership.poll_voter_change(node, now)
    if node.role is not Role.LEADER:
        return
    request = messages.begin_quorum_epoch(node.cluster_id, node.node_id, node.epoch)
    node.send_to_each(node.voters - leader.acknowledged, request, now)
    node.complete_parked(now)


def on_fetch(
    node: QuorumNode, request: InboundRequest, body: Any, now: int
) -> ResponsePayload | None:
    topic = body.topics[0] if body.topics else None
    if (
        topic is None
        or topic.topic != METADATA_TOPIC
        or len(topic.partitions) != 1
        or int(topic.partitions[0].partition) != 0
    ):
        return node.fetch_answer(ErrorCode.unknown_topic_or_partition)
    part = topic.partitions[0]
    replica_id = int(body.replica_id)
    requested_epoch = int(part.current_leader_epoch)
    if requested_epoch > node.epoch:
        return node.fetch_answer(ErrorCode.unknown_leader_epoch)
    if requested_epoch >= 0 and requested_epoch < node.epoch:
        return node.fetch_answer(ErrorCode.fenced_leader_epoch)
    leader = node.leader_state
    if node.role is not Role.LEADER or leader is None:
        return node.fetch_answer(ErrorCode.not_leader_or_follower)
    fetch_offset = int(part.fetch_offset)
    last_fetched_epoch = int(part.last_fetched_epoch)
    snapshot = node.log.latest_snapshot()
    if fetch_offset < node.log.start_offset and snapshot is not None:
        return node.fetch_answer(snapshot_id=snapshot)
    if fetch_offset > 0 or last_fetched_epoch >= 0:
        end = node.log.end_offset_for_epoch(last_fetched_epoch)
        if (
            end.epoch != last_fetched_epoch
            or end.offset < fetch_offset
            or fetch_offset > node.log.end_offset
        ):
            if end.offset < node.log.start_offset and snapshot is not None:
                return node.fetch_answer(snapshot_id=snapshot)
            if end.epoch < 0:  # older than everything here: start over from the start
                end = OffsetAndEpoch(node.log.start_offset, 0)
            return node.fetch_answer(diverging=end)
    if replica_id >= 0 and leader.update_replica(
        replica_id,
        fetch_offset,
        leader_end_offset=node.log.end_offset,
        wall_ms=node.clock.now_ms(),
        now_ms=now,
    ):
        node.high_watermark = leader.high_watermark
        node.complete_parked(now, high_watermark_moved=True)
    max_bytes = min(int(part.partition_max_bytes), node.config.fetch_max_bytes)
    max_wait = int(body.max_wait.total_seconds() * 1000)
    if fetch_offset >= node.log.end_offset and max_wait > 0:
        node.parked.append(
            ParkedFetch(
                request=request,
                replica_id=replica_id,
                fetch_offset=fetch_offset,
                max_bytes=max_bytes,
                deadline_ms=now + min(max_wait, node.config.fetch_max_wait_ms),
                high_watermark=node.sent_high_watermark.get(replica_id, node.high_watermark),
            )
        )
        return None
    node.sent_high_watermark[replica_id] = node.high_watermark
    return node.fetch_answer(records=node.log.read(fetch_offset, max_bytes))
