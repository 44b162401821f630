"""One RaftClient driven message by message: its answers to good and bad requests, and the
moves each of them causes (the simulation checks the quorum as a whole)."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import pytest
from kio.schema.describe_quorum.v2.request import DescribeQuorumRequest
from kio.schema.errors import ErrorCode
from kio.static.protocol import ResponsePayload

from strom.common.clock import ManualClock
from strom.raft import (
    ElectionState,
    InboundRequest,
    InboundResponse,
    InMemoryRaftLog,
    MemoryQuorumStateStore,
    NotLeaderError,
    OffsetAndEpoch,
    OutboundRequest,
    RaftClient,
    RaftConfig,
    Role,
    Trigger,
    messages,
)
from strom.raft.batches import data_batch
from strom.raft.quorum_state import IllegalTransition, next_role

CONFIG = RaftConfig(
    election_timeout_ms=100,
    fetch_timeout_ms=200,
    election_backoff_max_ms=100,
    request_timeout_ms=100,
    retry_backoff_ms=10,
    fetch_max_wait_ms=0,
    snapshot_chunk_bytes=64,
)
CLUSTER = "test-cluster"


class RecordingChannel:
    def __init__(self) -> None:
        self.sent: list[OutboundRequest] = []
        self.answers: list[ResponsePayload] = []

    def send(self, request: OutboundRequest) -> None:
        self.sent.append(request)

    def respond(self, ref: object, body: ResponsePayload) -> None:
        self.answers.append(body)


class Harness:
    def __init__(self, *, node_id: int = 1, voters: tuple[int, ...] = (1, 2, 3)) -> None:
        self.clock = ManualClock(now_ms=0)
        self.log = InMemoryRaftLog()
        self.store = MemoryQuorumStateStore()
        self.channel = RecordingChannel()
        self.node_id, self.voters = node_id, voters
        self.client = self.start()

    def start(self) -> RaftClient:
        self.client = RaftClient(
            node_id=self.node_id,
            voters=self.voters,
            cluster_id=CLUSTER,
            log=self.log,
            state_store=self.store,
            channel=self.channel,
            clock=self.clock,
            random=random.Random(7),
            config=CONFIG,
        )
        return self.client

    def ask(self, body: Any) -> Any:
        """Hand the node a request; its answer."""
        before = len(self.channel.answers)
        self.client.handle_request(InboundRequest(ref=object(), source=None, body=body))
        assert len(self.channel.answers) == before + 1
        return self.channel.answers[-1]

    def run_for(self, ms: int) -> None:
        for _ in range(ms):
            self.clock.advance(1)
            self.client.poll()

    def sent(self, api_key: int) -> list[OutboundRequest]:
        return [r for r in self.channel.sent if int(r.body.__api_key__) == api_key]

    def answer(self, request: OutboundRequest, body: Any) -> None:
        self.client.handle_response(
            InboundResponse(source=request.destination, request=request.body, body=body)
        )

    def elect(self) -> None:
        """Make this node the leader of the next epoch with node 2's vote."""
        self.run_for(CONFIG.election_timeout_ms * 2)
        assert self.role() is Role.CANDIDATE
        ask = next(r for r in self.sent(52) if r.destination == 2)
        leader = messages.LeaderAndEpoch(None, self.client.epoch)
        self.answer(ask, messages.vote_answer(ErrorCode.none, leader, granted=True))
        assert self.role() is Role.LEADER
        self.client.poll()

    def role(self) -> Role:
        return self.client.role


def partition(answer: Any) -> Any:
    topics = answer.topics if hasattr(answer, "topics") else answer.responses
    return topics[0].partitions[0]


def fetch(epoch: int, offset: int, last_epoch: int, *, replica: int = 2) -> Any:
    position = messages.FetchPosition(offset, last_epoch, 0)
    return messages.fetch(CLUSTER, replica, epoch, position, max_bytes=1 << 20, max_wait_ms=0)


# --- Vote ---------------------------------------------------------------------------------------


def test_a_vote_is_granted_once_per_epoch_and_persisted_first() -> None:
    node = Harness()
    answer = node.ask(messages.vote(CLUSTER, 2, 1, OffsetAndEpoch(0, 0)))
    assert partition(answer).vote_granted
    assert node.store.state == ElectionState(1, None, 2)
    rival = node.ask(messages.vote(CLUSTER, 3, 1, OffsetAndEpoch(0, 0)))
    assert not partition(rival).vote_granted
    again = node.ask(messages.vote(CLUSTER, 2, 1, OffsetAndEpoch(0, 0)))
    assert partition(again).vote_granted  # a repeated request gets the same answer


def test_a_candidate_whose_log_is_behind_gets_no_vote() -> None:
    node = Harness()
    node.log.append(data_batch([b"x"], base_offset=0, epoch=3, timestamp=0))
    answer = node.ask(messages.vote(CLUSTER, 2, 4, OffsetAndEpoch(5, 2)))
    assert not partition(answer).vote_granted
    assert node.client.epoch == 4  # the newer epoch is still taken


@pytest.mark.parametrize(
    ("candidate", "epoch", "code"),
    [(9, 1, ErrorCode.inconsistent_voter_set), (2, 0, ErrorCode.fenced_leader_epoch)],
)
def test_a_vote_from_an_unknown_voter_or_an_older_epoch_is_refused(
    candidate: int, epoch: int, code: ErrorCode
) -> None:
    node = Harness()
    node.ask(messages.vote(CLUSTER, 2, 1, OffsetAndEpoch(0, 0)))
    answer = node.ask(messages.vote(CLUSTER, candidate, epoch, OffsetAndEpoch(9, 9)))
    assert partition(answer).error_code == code
    assert not partition(answer).vote_granted
    assert node.store.state == ElectionState(1, None, 2)


@pytest.mark.parametrize(
    "body",
    [
        messages.vote("another-cluster", 2, 5, OffsetAndEpoch(0, 0)),
        messages.begin_quorum_epoch("another-cluster", 2, 5),
        messages.end_quorum_epoch("another-cluster", 2, 5, []),
        messages.fetch(
            "another-cluster",
            2,
            5,
            messages.FetchPosition(0, -1, 0),
            max_bytes=100,
            max_wait_ms=0,
        ),
    ],
    ids=["vote", "begin", "end", "fetch"],
)
def test_a_request_from_another_cluster_is_refused_and_changes_nothing(body: Any) -> None:
    node = Harness()
    answer = node.ask(body)
    assert answer.error_code == ErrorCode.inconsistent_cluster_id
    assert node.client.epoch == 0 and node.client.role is Role.UNATTACHED


# --- BeginQuorumEpoch and EndQuorumEpoch --------------------------------------------------------


def test_begin_quorum_epoch_makes_a_follower_and_an_older_one_is_fenced() -> None:
    node = Harness()
    assert partition(node.ask(messages.begin_quorum_epoch(CLUSTER, 3, 4))).error_code == 0
    assert node.client.role is Role.FOLLOWER
    assert node.client.leader_and_epoch == messages.LeaderAndEpoch(3, 4)
    stale = partition(node.ask(messages.begin_quorum_epoch(CLUSTER, 2, 3)))
    assert stale.error_code == ErrorCode.fenced_leader_epoch
    assert (stale.leader_id, stale.leader_epoch) == (3, 4)
    stranger = partition(node.ask(messages.begin_quorum_epoch(CLUSTER, 9, 5)))
    assert stranger.error_code == ErrorCode.inconsistent_voter_set


def test_end_quorum_epoch_lets_the_first_successor_stand_at_once() -> None:
    node = Harness()
    node.ask(messages.begin_quorum_epoch(CLUSTER, 3, 4))
    node.ask(messages.end_quorum_epoch(CLUSTER, 3, 4, [1, 2]))
    node.run_for(1)
    assert node.client.role is Role.CANDIDATE
    assert node.client.epoch == 5


# --- leading ------------------------------------------------------------------------------------


def test_a_new_leader_appends_a_leader_change_and_commits_only_with_a_majority() -> None:
    node = Harness()
    node.elect()
    assert node.log.end_offset == 1
    batch = next(node.log.batches(0, 1))
    assert batch.control is not None and batch.epoch == node.client.epoch
    node.log.flush()
    node.client.poll()
    assert node.client.high_watermark is None  # only the leader has it
    node.ask(fetch(node.client.epoch, 1, node.client.epoch))
    assert node.client.high_watermark == 1


def test_only_the_leader_of_the_epoch_may_append() -> None:
    node = Harness()
    with pytest.raises(NotLeaderError):
        node.client.append([b"x"], epoch=0)
    node.elect()
    with pytest.raises(NotLeaderError):
        node.client.append([b"x"], epoch=node.client.epoch - 1)
    assert node.client.append([b"a", b"b"], epoch=node.client.epoch) == 2


def test_a_leader_that_no_majority_fetches_from_resigns() -> None:
    node = Harness()
    node.elect()
    node.run_for(CONFIG.fetch_timeout_ms * 3 // 2 + 5)
    assert node.client.role is Role.RESIGNED
    assert node.sent(54)  # and tells the others (EndQuorumEpoch)


def test_a_lone_voter_leads_on_and_its_poll_sleeps() -> None:
    """With no one to hear from, the check-quorum deadline never moves: the poll must not
    wake for it (a single node once spun at 40% CPU, polling every loop turn)."""
    node = Harness(voters=(1,))
    node.run_for(CONFIG.election_timeout_ms * 2)
    assert node.role() is Role.LEADER
    node.log.flush()
    node.run_for(CONFIG.fetch_timeout_ms * 3)
    assert node.role() is Role.LEADER
    assert node.client.poll() > 0


def test_a_backoff_that_ran_out_is_no_deadline_to_wake_for() -> None:
    """An observer whose fetch failed backs off, then fetches again: while that fetch is in
    flight the poll sleeps until its timeout (the past backoff once made every broker of a
    cluster spin, polling every loop turn)."""
    node = Harness(node_id=4)
    node.client.poll()
    [first] = node.sent(1)
    node.client.handle_response(
        InboundResponse(source=first.destination, request=first.body, body=None)
    )
    node.run_for(CONFIG.retry_backoff_ms * 2)
    assert len(node.sent(1)) == 2  # fetching again, after the backoff
    assert node.client.poll() > 0


def test_a_leader_that_steps_down_answers_its_parked_fetches() -> None:
    """A long-poll fetch parked on the leader is answered when a newer leader takes over (not
    the leader, naming the new one), and leaves no passed deadline for the poll to wake for (a
    resumed, paused leader once spun there)."""
    node = Harness()
    node.elect()
    epoch, end = node.client.epoch, node.log.end_offset
    position = messages.FetchPosition(end, epoch, 0)
    body = messages.fetch(CLUSTER, 2, epoch, position, max_bytes=1 << 20, max_wait_ms=500)
    before = len(node.channel.answers)
    node.client.handle_request(InboundRequest(ref=object(), source=None, body=body))
    assert len(node.channel.answers) == before  # parked: nothing new to send
    begin = messages.begin_quorum_epoch(CLUSTER, 3, epoch + 1)
    node.client.handle_request(InboundRequest(ref=object(), source=None, body=begin))
    assert node.role() is Role.FOLLOWER
    answered = partition(node.channel.answers[before])
    assert answered.error_code == ErrorCode.not_leader_or_follower
    assert (answered.current_leader.leader_id, answered.current_leader.leader_epoch) == (
        3,
        epoch + 1,
    )
    assert node.client.poll() > 0


def test_a_fetch_parked_after_the_high_watermark_moved_is_answered_at_once() -> None:
    """The high watermark moves (the leader's flush) between a records answer and the fetch
    after it: that fetch learns of it at the next poll, not at its deadline (brokers once saw
    every metadata change 500 ms late)."""
    node = Harness(voters=(1,))
    node.client.config = dataclasses.replace(CONFIG, fetch_max_wait_ms=500)
    node.run_for(CONFIG.election_timeout_ms * 2)
    assert node.role() is Role.LEADER
    epoch = node.client.epoch

    def long_poll(offset: int, last_epoch: int) -> None:
        position = messages.FetchPosition(offset, last_epoch, 0)
        body = messages.fetch(CLUSTER, 4, epoch, position, max_bytes=1 << 20, max_wait_ms=500)
        node.client.handle_request(InboundRequest(ref=object(), source=None, body=body))

    long_poll(0, -1)
    first = partition(node.channel.answers[-1])
    assert first.records and first.high_watermark == -1  # the LeaderChange, not committed yet
    node.log.flush()
    node.client.poll()
    assert node.client.high_watermark == 1
    before = len(node.channel.answers)
    long_poll(1, epoch)
    node.clock.advance(1)
    node.client.poll()
    assert len(node.channel.answers) == before + 1
    assert partition(node.channel.answers[-1]).high_watermark == 1


def test_a_follower_restarted_as_one_keeps_following_and_its_poll_sleeps() -> None:
    """A node restarted as the follower of a known leader starts with an election deadline it
    never acts on; once passed, it must not keep the poll awake (restarted brokers once spun)."""
    node = Harness(node_id=4)
    node.store.state = ElectionState(3, 1, None)
    node.start()
    assert node.role() is Role.FOLLOWER
    answer = messages.fetch_answer(messages.FetchAnswer(messages.LeaderAndEpoch(1, 3), 0, 0))
    answered = 0
    for _ in range(CONFIG.election_timeout_ms * 3):
        node.clock.advance(1)
        node.client.poll()
        for request in node.sent(1)[answered:]:
            node.answer(request, answer)
            answered += 1
    assert node.role() is Role.FOLLOWER and answered > 1
    assert node.client.poll() > 0


def test_a_leader_restarts_resigned_in_its_epoch() -> None:
    node = Harness()
    node.elect()
    epoch = node.client.epoch
    restarted = node.start()
    assert restarted.role is Role.RESIGNED and restarted.epoch == epoch


@pytest.mark.parametrize(
    ("epoch_delta", "code"),
    [(-1, ErrorCode.fenced_leader_epoch), (1, ErrorCode.unknown_leader_epoch)],
)
def test_a_fetch_naming_another_epoch_is_refused(epoch_delta: int, code: ErrorCode) -> None:
    node = Harness()
    node.elect()
    answer = node.ask(fetch(node.client.epoch + epoch_delta, 0, -1))
    assert partition(answer).error_code == code


def test_a_fetch_for_another_partition_is_refused() -> None:
    node = Harness()
    node.elect()
    body = fetch(node.client.epoch, 0, -1)
    other = dataclasses.replace(body.topics[0], topic="orders")
    answer = node.ask(dataclasses.replace(body, topics=(other,)))
    assert partition(answer).error_code == ErrorCode.unknown_topic_or_partition


def test_a_follower_on_a_diverged_epoch_is_told_where_to_truncate() -> None:
    node = Harness()
    for epoch in (1, 1, 2):
        node.log.append(
            data_batch([b"r"], base_offset=node.log.end_offset, epoch=epoch, timestamp=0)
        )
    node.store.state = ElectionState(2)
    node.start()
    node.elect()  # epoch 3, leader change at offset 3
    # The follower has offsets 0-4 of epoch 1: epoch 1 ended at offset 2 here.
    answer = partition(node.ask(fetch(node.client.epoch, 5, 1)))
    assert (answer.diverging_epoch.epoch, answer.diverging_epoch.end_offset) == (1, 2)
    assert answer.records is None


def test_a_follower_behind_the_log_start_is_sent_to_the_snapshot() -> None:
    node = Harness()
    node.elect()
    epoch = node.client.epoch
    node.client.append([b"a", b"b", b"c"], epoch=epoch)
    node.log.flush()
    node.ask(fetch(epoch, node.log.end_offset, epoch))
    node.client.poll()
    assert node.client.high_watermark == 4
    writer = node.client.create_snapshot(4, epoch)
    assert writer is not None
    writer.append([b"state"])
    writer.freeze()
    assert node.log.start_offset == 4
    answer = partition(node.ask(fetch(epoch, 0, -1, replica=3)))
    assert (answer.snapshot_id.end_offset, answer.snapshot_id.epoch) == (4, epoch)

    missing = messages.fetch_snapshot(
        CLUSTER, 3, epoch, OffsetAndEpoch(9, 9), position=0, max_bytes=64
    )
    assert partition(node.ask(missing)).error_code == ErrorCode.snapshot_not_found
    beyond = messages.fetch_snapshot(
        CLUSTER, 3, epoch, OffsetAndEpoch(4, epoch), position=10**6, max_bytes=64
    )
    assert partition(node.ask(beyond)).error_code == ErrorCode.position_out_of_range
    first = partition(
        node.ask(
            messages.fetch_snapshot(
                CLUSTER, 3, epoch, OffsetAndEpoch(4, epoch), position=0, max_bytes=64
            )
        )
    )
    assert first.error_code == 0 and 0 < len(bytes(first.unaligned_records)) <= 64


def test_describe_quorum_is_answered_by_the_leader_only() -> None:
    node = Harness()
    ask = DescribeQuorumRequest(topics=())
    assert partition(node.ask(ask)).error_code == ErrorCode.not_leader_or_follower
    node.elect()
    node.ask(fetch(node.client.epoch, 1, node.client.epoch))
    described = partition(node.ask(ask))
    assert described.error_code == 0 and described.leader_id == 1
    assert [int(v.replica_id) for v in described.current_voters] == [1, 2, 3]
    assert [int(v.log_end_offset) for v in described.current_voters][1] == 1


# --- the transition table -----------------------------------------------------------------------


def test_the_transition_table_refuses_a_move_it_does_not_name() -> None:
    assert next_role(Role.CANDIDATE, Trigger.WON_ELECTION) is Role.LEADER
    with pytest.raises(IllegalTransition, match="unattached cannot move"):
        next_role(Role.UNATTACHED, Trigger.WON_ELECTION)
