"""Random join/sync/heartbeat/leave/commit/time events against the coordinator core.

Invariants: at most one owner per partition per generation (the leader assigns with a simple
range assignor), generations only grow, a fenced member's commit is refused, and committed
offsets equal the last accepted commit.
"""

from __future__ import annotations

from typing import Any

from group_harness import commit, join, make_coordinator, sync
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from kio.schema.heartbeat.v4 import request as heartbeat_req
from kio.schema.leave_group.v5 import request as leave_req
from kio.schema.types import GroupId
from kio.static.primitive import i32

from strom.common import ErrorCode

PARTITIONS = 6


class GroupMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.core, _ = make_coordinator()
        self.now = 0
        self.members: dict[str, int] = {}
        """member id -> the generation its last JoinGroup answer gave."""
        self.instances: dict[str, str] = {}
        """member id -> group.instance.id, for static members."""
        self.owners: dict[int, dict[int, str]] = {}
        """generation -> partition -> owner: its group.instance.id, else its member id (from
        SyncGroup answers; a replaced static member's successor owns what it owned)."""
        self.committed: dict[int, int] = {}
        self.last_generation = 0

    def _reply(self, response: Any, instance_id: str | None = None) -> None:
        if response.error_code is ErrorCode.none and response.member_id:
            self.members[response.member_id] = response.generation_id
            if instance_id is not None:
                self.instances[response.member_id] = instance_id
            if response.members:  # the leader assigns
                ids = sorted(m.member_id for m in response.members)
                plan = {
                    m: bytes(p for p in range(PARTITIONS) if p % len(ids) == i)
                    for i, m in enumerate(ids)
                }
                generation, leader = response.generation_id, response.member_id

                def synced(answer: Any) -> None:
                    self._synced(answer, generation, leader)

                self.core.sync_group(sync(leader, generation, plan), now_ms=self.now, reply=synced)

    def _synced(self, response: Any, generation: int, member_id: str) -> None:
        if response.error_code is ErrorCode.none:
            owners = self.owners.setdefault(generation, {})
            owner = self.instances.get(member_id, member_id)
            for partition in response.assignment:
                assert owners.get(partition, owner) == owner, "two owners"
                owners[partition] = owner

    @rule(known=st.booleans(), index=st.integers(0, 4))
    def join(self, known: bool, index: int) -> None:
        ids = sorted(self.members)
        member_id = ids[index % len(ids)] if known and ids else ""
        self.core.join_group(
            join(member_id),
            client_id="c",
            client_host="/h",
            require_known_member_id=False,
            now_ms=self.now,
            reply=self._reply,
        )

    @rule(instance=st.sampled_from(["s0", "s1"]))
    def static_join(self, instance: str) -> None:
        """A static member (re)starts: it joins with its group.instance.id and no member id."""
        self.core.join_group(
            join(instance_id=instance),
            client_id="s",
            client_host="/h",
            require_known_member_id=True,
            now_ms=self.now,
            reply=lambda r: self._reply(r, instance),
        )

    @rule(index=st.integers(0, 4))
    def follower_sync(self, index: int) -> None:
        if not self.members:
            return
        member_id = sorted(self.members)[index % len(self.members)]
        generation = self.members[member_id]
        self.core.sync_group(
            sync(member_id, generation),
            now_ms=self.now,
            reply=lambda r: self._synced(r, generation, member_id),
        )

    @rule(index=st.integers(0, 4))
    def heartbeat(self, index: int) -> None:
        if self.members:
            member_id = sorted(self.members)[index % len(self.members)]
            self.core.heartbeat(
                heartbeat_req.HeartbeatRequest(
                    group_id=GroupId("g"),
                    generation_id=i32(self.members[member_id]),
                    member_id=member_id,
                ),
                now_ms=self.now,
            )

    @rule(index=st.integers(0, 4))
    def leave(self, index: int) -> None:
        if self.members:
            member_id = sorted(self.members)[index % len(self.members)]
            del self.members[member_id]
            self.core.leave_group(
                leave_req.LeaveGroupRequest(
                    group_id=GroupId("g"),
                    members=(
                        leave_req.MemberIdentity(member_id=member_id, group_instance_id=None),
                    ),
                ),
                now_ms=self.now,
            )

    @rule(
        index=st.integers(0, 4), partition=st.integers(0, PARTITIONS - 1), offset=st.integers(0, 99)
    )
    def commit(self, index: int, partition: int, offset: int) -> None:
        if not self.members:
            return
        member_id = sorted(self.members)[index % len(self.members)]
        generation = self.members[member_id]
        group = self.core.groups.get("g")
        current = (
            group is not None and member_id in group.members and group.generation == generation
        )
        out: list[Any] = []
        self.core.offset_commit(
            commit(member_id, generation, {partition: offset}), now_ms=self.now, reply=out.append
        )
        error = out[0].topics[0].partitions[0].error_code
        if not current:
            assert error is not ErrorCode.none, "a fenced member's commit was accepted"
        if error is ErrorCode.none:
            self.committed[partition] = offset

    @rule(ms=st.sampled_from([100, 3_000, 11_000, 31_000]))
    def advance(self, ms: int) -> None:
        self.now += ms
        self.core.poll(self.now)

    @invariant()
    def generations_grow_and_offsets_match(self) -> None:
        group = self.core.groups.get("g")
        if group is None:
            return
        assert group.generation >= self.last_generation
        self.last_generation = group.generation
        assert {tp[1]: o.offset for tp, o in group.offsets.items()} == self.committed


GroupMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
TestGroupMachine = GroupMachine.TestCase
