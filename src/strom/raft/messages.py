"""The quorum's requests and answers, built from plain values (no state here).

Every message names one partition, ``__cluster_metadata-0``; answers carry the sender's view of
the leader and epoch so that a node behind learns of the newer epoch from any reply.

Each function imports the kio schema of its message when it first runs: a lone voter sends and
receives none of them, and a node's start-up does not pay for building their classes.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from kio.schema.errors import ErrorCode
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import Records, i32, i32Timedelta, i64, u16
from kio.static.protocol import RequestPayload, ResponsePayload

from strom.raft.leader_state import ReplicaState
from strom.raft.log import OffsetAndEpoch
from strom.raft.voters import VoterSet

METADATA_TOPIC: Final = "__cluster_metadata"
_TOPIC: Final = TopicName(METADATA_TOPIC)
_ZERO: Final = i32Timedelta.parse(datetime.timedelta(0))


@dataclass(frozen=True, slots=True)
class LeaderAndEpoch:
    leader_id: int | None
    epoch: int

    @property
    def leader(self) -> BrokerId:
        return BrokerId(-1 if self.leader_id is None else self.leader_id)


# --- requests ----------------------------------------------------------------------------------


def vote(cluster_id: str, candidate: int, epoch: int, last: OffsetAndEpoch) -> RequestPayload:
    from kio.schema.vote.v0 import request as vote_request  # noqa: PLC0415

    partition = vote_request.PartitionData(
        partition_index=i32(0),
        replica_epoch=i32(epoch),
        replica_id=BrokerId(candidate),
        last_offset_epoch=i32(last.epoch),
        last_offset=i64(last.offset),
    )
    return vote_request.VoteRequest(
        cluster_id=cluster_id,
        topics=(vote_request.TopicData(topic_name=_TOPIC, partitions=(partition,)),),
    )


def pre_vote(cluster_id: str, candidate: int, epoch: int, last: OffsetAndEpoch) -> RequestPayload:
    """KIP-996's pre-vote (Vote v2 with ``PreVote``): would the voter vote for ``candidate`` in
    ``epoch``? Nothing changes on the voter."""
    from kio.schema.vote.v2 import request as vote_v2_request  # noqa: PLC0415

    partition = vote_v2_request.PartitionData(
        partition_index=i32(0),
        replica_epoch=i32(epoch),
        replica_id=BrokerId(candidate),
        replica_directory_id=None,
        voter_directory_id=None,
        last_offset_epoch=i32(last.epoch),
        last_offset=i64(last.offset),
        pre_vote=True,
    )
    return vote_v2_request.VoteRequest(
        cluster_id=cluster_id,
        topics=(vote_v2_request.TopicData(topic_name=_TOPIC, partitions=(partition,)),),
    )


def is_pre_vote(body: object) -> bool:
    """Whether a Vote request is a pre-vote."""
    return bool(getattr(body.topics[0].partitions[0], "pre_vote", False))  # type: ignore[attr-defined]


def begin_quorum_epoch(cluster_id: str, leader_id: int, epoch: int) -> RequestPayload:
    from kio.schema.begin_quorum_epoch.v0 import request as begin_request  # noqa: PLC0415

    partition = begin_request.PartitionData(
        partition_index=i32(0), leader_id=BrokerId(leader_id), leader_epoch=i32(epoch)
    )
    return begin_request.BeginQuorumEpochRequest(
        cluster_id=cluster_id,
        topics=(begin_request.TopicData(topic_name=_TOPIC, partitions=(partition,)),),
    )


def end_quorum_epoch(
    cluster_id: str, leader_id: int, epoch: int, successors: Sequence[int]
) -> RequestPayload:
    from kio.schema.end_quorum_epoch.v0 import request as end_request  # noqa: PLC0415

    partition = end_request.PartitionData(
        partition_index=i32(0),
        leader_id=BrokerId(leader_id),
        leader_epoch=i32(epoch),
        preferred_successors=tuple(i32(s) for s in successors),
    )
    return end_request.EndQuorumEpochRequest(
        cluster_id=cluster_id,
        topics=(end_request.TopicData(topic_name=_TOPIC, partitions=(partition,)),),
    )


@dataclass(frozen=True, slots=True)
class FetchPosition:
    """Where a follower asks to read from: its log end, the epoch of its last batch, its start."""

    fetch_offset: int
    last_fetched_epoch: int
    log_start_offset: int


def fetch(
    cluster_id: str,
    replica_id: int,
    epoch: int,
    position: FetchPosition,
    *,
    max_bytes: int,
    max_wait_ms: int,
) -> RequestPayload:
    from kio.schema.fetch.v12 import request as fetch_request  # noqa: PLC0415

    partition = fetch_request.FetchPartition(
        partition=i32(0),
        current_leader_epoch=i32(epoch),
        fetch_offset=i64(position.fetch_offset),
        last_fetched_epoch=i32(position.last_fetched_epoch),
        log_start_offset=i64(position.log_start_offset),
        partition_max_bytes=i32(max_bytes),
    )
    return fetch_request.FetchRequest(
        cluster_id=cluster_id,
        replica_id=BrokerId(replica_id),
        max_wait=i32Timedelta.parse(datetime.timedelta(milliseconds=max_wait_ms)),
        min_bytes=i32(1),
        topics=(fetch_request.FetchTopic(topic=_TOPIC, partitions=(partition,)),),
        forgotten_topics_data=(),
    )


def fetch_snapshot(
    cluster_id: str,
    replica_id: int,
    epoch: int,
    snapshot: OffsetAndEpoch,
    *,
    position: int,
    max_bytes: int,
) -> RequestPayload:
    from kio.schema.fetch_snapshot.v0 import request as snapshot_request  # noqa: PLC0415

    partition = snapshot_request.PartitionSnapshot(
        partition=i32(0),
        current_leader_epoch=i32(epoch),
        snapshot_id=snapshot_request.SnapshotId(
            end_offset=i64(snapshot.offset), epoch=i32(snapshot.epoch)
        ),
        position=i64(position),
    )
    return snapshot_request.FetchSnapshotRequest(
        cluster_id=cluster_id,
        replica_id=BrokerId(replica_id),
        max_bytes=i32(max_bytes),
        topics=(snapshot_request.TopicSnapshot(name=_TOPIC, partitions=(partition,)),),
    )


# --- answers -----------------------------------------------------------------------------------


def vote_answer(error: ErrorCode, leader: LeaderAndEpoch, *, granted: bool) -> ResponsePayload:
    from kio.schema.vote.v0 import response as vote_response  # noqa: PLC0415

    partition = vote_response.PartitionData(
        partition_index=i32(0),
        error_code=error,
        leader_id=leader.leader,
        leader_epoch=i32(leader.epoch),
        vote_granted=granted,
    )
    return vote_response.VoteResponse(
        error_code=ErrorCode.none,
        topics=(vote_response.TopicData(topic_name=_TOPIC, partitions=(partition,)),),
    )


def begin_answer(error: ErrorCode, leader: LeaderAndEpoch) -> ResponsePayload:
    from kio.schema.begin_quorum_epoch.v0 import response as begin_response  # noqa: PLC0415

    partition = begin_response.PartitionData(
        partition_index=i32(0),
        error_code=error,
        leader_id=leader.leader,
        leader_epoch=i32(leader.epoch),
    )
    return begin_response.BeginQuorumEpochResponse(
        error_code=ErrorCode.none,
        topics=(begin_response.TopicData(topic_name=_TOPIC, partitions=(partition,)),),
    )


def end_answer(error: ErrorCode, leader: LeaderAndEpoch) -> ResponsePayload:
    from kio.schema.end_quorum_epoch.v0 import response as end_response  # noqa: PLC0415

    partition = end_response.PartitionData(
        partition_index=i32(0),
        error_code=error,
        leader_id=leader.leader,
        leader_epoch=i32(leader.epoch),
    )
    return end_response.EndQuorumEpochResponse(
        error_code=ErrorCode.none,
        topics=(end_response.TopicData(topic_name=_TOPIC, partitions=(partition,)),),
    )


def wrong_cluster(api_key: int) -> ResponsePayload:
    """The answer to a request that names another cluster (top-level error, no topics)."""
    code = ErrorCode.inconsistent_cluster_id
    if api_key == 52:
        from kio.schema.vote.v0.response import VoteResponse  # noqa: PLC0415

        return VoteResponse(error_code=code, topics=())
    if api_key == 53:
        from kio.schema.begin_quorum_epoch.v0.response import BeginQuorumEpochResponse  # noqa: PLC0415

        return BeginQuorumEpochResponse(error_code=code, topics=())
    if api_key == 54:
        from kio.schema.end_quorum_epoch.v0.response import EndQuorumEpochResponse  # noqa: PLC0415

        return EndQuorumEpochResponse(error_code=code, topics=())
    from kio.schema.fetch.v12.response import FetchResponse  # noqa: PLC0415

    return FetchResponse(throttle_time=_ZERO, error_code=code, responses=())


@dataclass(frozen=True, slots=True)
class FetchAnswer:
    """What the leader tells a fetching follower about its log."""

    leader: LeaderAndEpoch
    high_watermark: int | None
    log_start_offset: int


def fetch_answer(
    state: FetchAnswer,
    error: ErrorCode = ErrorCode.none,
    *,
    records: bytes | None = None,
    diverging: OffsetAndEpoch | None = None,
    snapshot_id: OffsetAndEpoch | None = None,
) -> ResponsePayload:
    from kio.schema.fetch.v12 import response as fetch_response  # noqa: PLC0415

    partition = fetch_response.PartitionData(
        partition_index=i32(0),
        error_code=error,
        high_watermark=i64(-1 if state.high_watermark is None else state.high_watermark),
        log_start_offset=i64(state.log_start_offset),
        diverging_epoch=fetch_response.EpochEndOffset(
            epoch=i32(diverging.epoch if diverging else -1),
            end_offset=i64(diverging.offset if diverging else -1),
        ),
        current_leader=fetch_response.LeaderIdAndEpoch(
            leader_id=state.leader.leader, leader_epoch=i32(state.leader.epoch)
        ),
        snapshot_id=fetch_response.SnapshotId(
            end_offset=i64(snapshot_id.offset if snapshot_id else -1),
            epoch=i32(snapshot_id.epoch if snapshot_id else -1),
        ),
        aborted_transactions=None,
        records=Records(records) if records else None,
    )
    return fetch_response.FetchResponse(
        throttle_time=_ZERO,
        error_code=ErrorCode.none,
        responses=(fetch_response.FetchableTopicResponse(topic=_TOPIC, partitions=(partition,)),),
    )


def snapshot_answer(
    error: ErrorCode,
    leader: LeaderAndEpoch,
    snapshot: OffsetAndEpoch | None = None,
    *,
    size: int = -1,
    position: int = -1,
    chunk: bytes = b"",
) -> ResponsePayload:
    from kio.schema.fetch_snapshot.v0 import response as snapshot_response  # noqa: PLC0415

    partition = snapshot_response.PartitionSnapshot(
        index=i32(0),
        error_code=error,
        snapshot_id=snapshot_response.SnapshotId(
            end_offset=i64(snapshot.offset if snapshot else -1),
            epoch=i32(snapshot.epoch if snapshot else -1),
        ),
        current_leader=snapshot_response.LeaderIdAndEpoch(
            leader_id=leader.leader, leader_epoch=i32(leader.epoch)
        ),
        size=i64(size),
        position=i64(position),
        unaligned_records=Records(chunk),
    )
    return snapshot_response.FetchSnapshotResponse(
        throttle_time=_ZERO,
        error_code=ErrorCode.none,
        topics=(snapshot_response.TopicSnapshot(name=_TOPIC, partitions=(partition,)),),
    )


def describe_quorum_answer(
    leader: LeaderAndEpoch,
    *,
    high_watermark: int | None,
    voters: Iterable[ReplicaState] = (),
    observers: Iterable[ReplicaState] = (),
    voter_set: VoterSet | None = None,
    error_message: str | None = None,
) -> ResponsePayload:
    """The quorum's state as its leader sees it; ``error_message`` when this node does not lead.
    ``voter_set`` gives the voters' directory ids and listeners (v2's ``nodes``)."""
    from kio.schema.describe_quorum.v2 import response as describe_response  # noqa: PLC0415

    known = voter_set if voter_set is not None else VoterSet(())

    def states(replicas: Iterable[ReplicaState]) -> tuple[describe_response.ReplicaState, ...]:
        return tuple(
            describe_response.ReplicaState(
                replica_id=BrokerId(r.node_id),
                replica_directory_id=node.directory_id
                if (node := known.get(r.node_id)) is not None
                else None,
                log_end_offset=i64(r.end_offset),
                last_fetch_timestamp=i64(r.last_fetch_ms),
                last_caught_up_timestamp=i64(r.last_caught_up_ms),
            )
            for r in sorted(replicas, key=lambda r: r.node_id)
        )

    partition = describe_response.PartitionData(
        partition_index=i32(0),
        error_code=ErrorCode.none if error_message is None else ErrorCode.not_leader_or_follower,
        error_message=error_message,
        leader_id=leader.leader,
        leader_epoch=i32(leader.epoch),
        high_watermark=i64(-1 if high_watermark is None else high_watermark),
        current_voters=states(voters),
        observers=states(observers),
    )
    return describe_response.DescribeQuorumResponse(
        error_code=ErrorCode.none,
        error_message=None,
        topics=(describe_response.TopicData(topic_name=_TOPIC, partitions=(partition,)),),
        nodes=tuple(
            describe_response.Node(
                node_id=BrokerId(node.node_id),
                listeners=tuple(
                    describe_response.Listener(name=e.name, host=e.host, port=u16(e.port))
                    for e in node.endpoints
                ),
            )
            for node in known.nodes
            if node.endpoints
        ),
    )
