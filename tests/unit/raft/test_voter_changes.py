"""AddRaftVoter, RemoveRaftVoter and UpdateRaftVoter on one leader, message by message
(KIP-853); the simulation checks the quorum as a whole."""

from __future__ import annotations

import datetime
import random
import uuid
from typing import Any

from kio.schema.add_raft_voter.v0.request import AddRaftVoterRequest, Listener
from kio.schema.add_raft_voter.v0.response import AddRaftVoterResponse
from kio.schema.errors import ErrorCode
from kio.schema.remove_raft_voter.v0.request import RemoveRaftVoterRequest
from kio.schema.update_raft_voter.v0.request import KRaftVersionFeature, UpdateRaftVoterRequest
from kio.schema.update_raft_voter.v0.request import Listener as UpdateListener
from kio.static.primitive import i16, i32, i32Timedelta, u16
from kio.static.protocol import ResponsePayload

from strom.common.clock import ManualClock
from strom.raft import (
    InboundRequest,
    InMemoryRaftLog,
    MemoryQuorumStateStore,
    OffsetAndEpoch,
    OutboundRequest,
    RaftClient,
    RaftConfig,
    Role,
    SnapshotWriter,
    messages,
)
from strom.raft.voters import Endpoint, VoterNode, VoterSet

CONFIG = RaftConfig(election_timeout_ms=100, fetch_timeout_ms=200, fetch_max_wait_ms=0)
ONE = VoterNode(1, uuid.UUID(int=1), (Endpoint("CONTROLLER", "c1", 9093),))
TWO_DIRECTORY = uuid.UUID(int=2)


class Channel:
    def __init__(self) -> None:
        self.sent: list[OutboundRequest] = []
        self.answers: list[Any] = []

    def send(self, request: OutboundRequest) -> None:
        self.sent.append(request)

    def respond(self, ref: object, body: ResponsePayload) -> None:
        self.answers.append(body)


class Leader:
    """Node 1, the only voter of a quorum formatted with ``--standalone``."""

    def __init__(self) -> None:
        self.clock = ManualClock(now_ms=0)
        self.log = InMemoryRaftLog()
        SnapshotWriter(
            OffsetAndEpoch(0, 0),
            timestamp=0,
            on_frozen=self.log.store_snapshot,
            voters=VoterSet.of([ONE]),
        ).freeze()
        self.channel = Channel()
        self.client = RaftClient(
            node_id=1,
            voters=(),
            cluster_id="c",
            log=self.log,
            state_store=MemoryQuorumStateStore(),
            channel=self.channel,
            clock=self.clock,
            random=random.Random(3),
            config=CONFIG,
            directory_id=ONE.directory_id,
        )
        self.poll()
        assert self.role() is Role.LEADER

    def poll(self, ms: int = 1) -> None:
        for _ in range(ms):
            self.clock.advance(1)
            self.log.flush()
            self.client.poll()

    def role(self) -> Role:
        return self.client.role

    def ask(self, body: Any) -> None:
        self.client.handle_request(InboundRequest(ref=object(), source=None, body=body))

    def fetch_as(self, node_id: int) -> None:
        position = messages.FetchPosition(self.log.end_offset, self.log.last_epoch, 0)
        epoch = self.client.epoch
        body = messages.fetch("c", node_id, epoch, position, max_bytes=1 << 20, max_wait_ms=0)
        self.ask(body)


def add(node_id: int) -> AddRaftVoterRequest:
    return AddRaftVoterRequest(
        cluster_id="c",
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=5)),
        voter_id=i32(node_id),
        voter_directory_id=TWO_DIRECTORY,
        listeners=(Listener(name="CONTROLLER", host=f"c{node_id}", port=u16(9093)),),
    )


def test_the_leader_puts_the_bootstrap_voters_in_the_log() -> None:
    leader = Leader()
    assert leader.client.voters == {1}
    assert [b.control for b in leader.log.batches(0, leader.log.end_offset)] == [2, 5, 6]


def test_a_caught_up_observer_becomes_a_voter_and_the_leader_leads_on() -> None:
    leader = Leader()
    leader.poll(CONFIG.fetch_timeout_ms * 3)  # a lone leader for long: no check quorum runs
    leader.ask(add(2))  # not fetching yet: not caught up
    assert leader.channel.answers[-1].error_code == ErrorCode.request_timed_out
    leader.fetch_as(2)
    leader.ask(add(2))
    assert leader.client.voters == {1, 2}  # at once, as appended
    assert leader.client.high_watermark is not None
    leader.poll(CONFIG.fetch_timeout_ms)  # check quorum starts over with the new set ...
    assert leader.role() is Role.LEADER
    leader.poll(CONFIG.fetch_timeout_ms // 2 + 5)  # ... and node 2 never fetched
    assert leader.role() is Role.RESIGNED
    assert leader.channel.answers[-1].error_code == ErrorCode.not_leader_or_follower


def test_the_change_is_answered_once_committed_and_one_change_at_a_time() -> None:
    leader = Leader()
    leader.fetch_as(2)
    leader.ask(add(2))
    leader.ask(add(3))  # the first change is not committed yet
    assert leader.channel.answers[-1].error_code == ErrorCode.request_timed_out
    leader.fetch_as(2)  # node 2 has the new set: committed
    leader.poll()
    answer = leader.channel.answers[-1]
    assert isinstance(answer, AddRaftVoterResponse) and answer.error_code == ErrorCode.none
    leader.ask(add(2))
    assert leader.channel.answers[-1].error_code == ErrorCode.duplicate_voter


def test_a_leader_that_removes_itself_resigns_once_the_removal_is_committed() -> None:
    leader = Leader()
    leader.fetch_as(2)
    leader.ask(add(2))
    leader.fetch_as(2)
    leader.poll()
    remove = RemoveRaftVoterRequest(
        cluster_id="c", voter_id=i32(1), voter_directory_id=ONE.directory_id
    )
    leader.ask(remove)
    assert leader.client.voters == {2}
    assert leader.role() is Role.LEADER  # it leads until the removal is committed
    leader.fetch_as(2)
    leader.poll()
    assert leader.channel.answers[-1].error_code == ErrorCode.none
    assert leader.role() is Role.RESIGNED
    assert not leader.client.is_voter


def test_removing_an_unknown_voter_or_the_last_one_is_refused() -> None:
    leader = Leader()
    leader.poll()
    leader.ask(RemoveRaftVoterRequest(cluster_id="c", voter_id=i32(9), voter_directory_id=None))
    assert leader.channel.answers[-1].error_code == ErrorCode.voter_not_found
    leader.ask(RemoveRaftVoterRequest(cluster_id="c", voter_id=i32(1), voter_directory_id=None))
    assert leader.channel.answers[-1].error_code == ErrorCode.invalid_request


def test_a_static_quorum_refuses_changes() -> None:
    leader = Leader()
    static = RaftClient(
        node_id=1,
        voters=(1,),
        cluster_id="c",
        log=InMemoryRaftLog(),
        state_store=MemoryQuorumStateStore(),
        channel=leader.channel,
        clock=leader.clock,
        random=random.Random(3),
        config=CONFIG,
    )
    for _ in range(3):
        leader.clock.advance(1)
        static.log.flush()  # type: ignore[attr-defined]
        static.poll()
    static.handle_request(InboundRequest(ref=object(), source=None, body=add(2)))
    assert leader.channel.answers[-1].error_code == ErrorCode.unsupported_version


def test_a_voter_updates_its_endpoints() -> None:
    leader = Leader()
    leader.poll()
    update = UpdateRaftVoterRequest(
        cluster_id="c",
        current_leader_epoch=i32(leader.client.epoch),
        voter_id=i32(1),
        voter_directory_id=ONE.directory_id,
        listeners=(UpdateListener(name="CONTROLLER", host="new-c1", port=u16(19093)),),
        k_raft_version_feature=KRaftVersionFeature(
            min_supported_version=i16(0), max_supported_version=i16(1)
        ),
    )
    leader.ask(update)
    leader.poll()
    assert leader.channel.answers[-1].error_code == ErrorCode.none
    voter = leader.client.voter_history.latest().get(1)
    assert voter is not None
    assert voter.endpoints == (Endpoint("CONTROLLER", "new-c1", 19093),)
