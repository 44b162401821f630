"""The group coordinator core's error answers, static leaves, offset retention and the admin
APIs (DescribeGroups, ListGroups, DeleteGroups, OffsetDelete, OffsetFetch)."""

from __future__ import annotations

import dataclasses
import struct
from typing import Any

from group_harness import commit, join, make_coordinator, sync
from kio.schema.leave_group.v5 import request as leave_req
from kio.schema.list_groups.v5 import request as list_req
from kio.schema.offset_delete.v0 import request as offset_delete_req
from kio.schema.offset_fetch.v9 import request as fetch_req
from kio.schema.types import GroupId, TopicName
from kio.static.primitive import i32

from strom.common import ErrorCode
from strom.coordinator.group import GroupCoordinator, GroupState
from strom.coordinator.group.records import GroupMetadataKey, OffsetCommitKey


def _one(call: Any, *args: Any, **kwargs: Any) -> Any:
    out: list[Any] = []
    call(*args, reply=out.append, **kwargs)
    assert len(out) == 1, out
    return out[0]


def _join(core: GroupCoordinator, request: Any = None, now_ms: int = 0) -> Any:
    return _one(
        core.join_group,
        request if request is not None else join(),
        client_id="c",
        client_host="/h",
        require_known_member_id=False,
        now_ms=now_ms,
    )


def _stable_member(core: GroupCoordinator, request: Any = None) -> str:
    joined = _join(core, request)
    member_id: str = joined.member_id
    _one(core.sync_group, sync(member_id, joined.generation_id, {member_id: b"A"}), now_ms=0)
    return member_id


def _subscription(*topics: str) -> bytes:
    """A ``ConsumerProtocolSubscription`` v0 of ``topics`` (no user data)."""
    out = struct.pack(">hi", 0, len(topics))
    for topic in topics:
        out += struct.pack(">h", len(topic)) + topic.encode()
    return out + struct.pack(">i", -1)


def _leave(core: GroupCoordinator, member_id: str, instance_id: str | None) -> Any:
    return core.leave_group(
        leave_req.LeaveGroupRequest(
            group_id=GroupId("g"),
            members=(leave_req.MemberIdentity(member_id=member_id, group_instance_id=instance_id),),
        ),
        now_ms=1,
    )


def test_join_errors() -> None:
    core, _ = make_coordinator(max_size=1)
    assert _join(core, dataclasses.replace(join(), group_id=GroupId(""))).error_code is (
        ErrorCode.invalid_group_id
    )
    assert _join(core, join("nobody")).error_code is ErrorCode.unknown_member_id
    _stable_member(core)
    assert _join(core).error_code is ErrorCode.group_max_size_reached
    other = dataclasses.replace(join(), protocol_type="connect")
    assert _join(core, other).error_code is ErrorCode.inconsistent_group_protocol


def test_load_in_progress_until_the_partition_is_replayed() -> None:
    core, _ = make_coordinator()
    core.begin_loading(4)
    assert _join(core).error_code is ErrorCode.coordinator_load_in_progress
    fetched = core.offset_fetch(
        fetch_req.OffsetFetchRequest(
            groups=(fetch_req.OffsetFetchRequestGroup(group_id=GroupId("g"), topics=None),),
            require_stable=True,
        )
    )
    assert fetched.groups[0].error_code is ErrorCode.coordinator_load_in_progress
    for partition in range(4):
        core.finish_loading(partition, 0)
    assert _join(core).error_code is ErrorCode.none


def test_commit_errors_by_group_state() -> None:
    core, _ = make_coordinator()
    missing = _one(core.offset_commit, commit("m", 1, {0: 1}), now_ms=0)
    assert missing.topics[0].partitions[0].error_code is ErrorCode.group_id_not_found
    joined = _join(core)
    completing = _one(core.offset_commit, commit(joined.member_id, 1, {0: 1}), now_ms=0)
    assert completing.topics[0].partitions[0].error_code is ErrorCode.rebalance_in_progress


def test_leader_rejoining_while_completing_gets_the_members_again() -> None:
    core, _ = make_coordinator()
    first = _join(core)
    again = _join(core, join(first.member_id))
    assert again.error_code is ErrorCode.none and again.generation_id == first.generation_id
    assert [m.member_id for m in again.members] == [first.member_id]
    assert core.groups["g"].state is GroupState.COMPLETING_REBALANCE


def test_static_member_leaves_by_instance_id() -> None:
    core, _ = make_coordinator()
    member_id = _stable_member(core, join(instance_id="i"))
    fenced = _leave(core, "someone-else", "i")
    assert fenced.members[0].error_code is ErrorCode.fenced_instance_id
    left = _leave(core, "", "i")
    assert left.error_code is ErrorCode.none and left.members[0].error_code is ErrorCode.none
    group = core.groups["g"]
    assert member_id not in group.members and not group.static_members
    assert group.state is GroupState.EMPTY and group.generation == 2


def test_new_member_that_never_completes_its_join_expires() -> None:
    core, _ = make_coordinator()
    member_id = _stable_member(core)
    out: list[Any] = []
    core.join_group(
        join(),
        client_id="late",
        client_host="/h",
        require_known_member_id=False,
        now_ms=1,
        reply=out.append,
    )
    # the old member rejoins neither: the rebalance completes with the new member only
    core.poll(31_000)
    assert out[0].error_code is ErrorCode.none and member_id not in core.groups["g"].members
    core.poll(31_000 + 10_001)  # the new member never synced nor heartbeated
    assert not core.groups["g"].members


def test_describe_and_list_groups() -> None:
    core, _ = make_coordinator()
    member_id = _stable_member(core, join(protocol=_subscription("t")))
    described = core.describe_groups((GroupId("g"), GroupId("nope"))).groups
    assert described[0].error_code is ErrorCode.none and described[0].group_state == "Stable"
    assert described[0].protocol_data == "range"
    assert [(m.member_id, m.member_assignment) for m in described[0].members] == [(member_id, b"A")]
    assert described[1].error_code is ErrorCode.group_id_not_found
    assert described[1].group_state == "Dead"

    def listed(*states: str) -> list[str]:
        request = list_req.ListGroupsRequest(states_filter=states, types_filter=())
        return [g.group_id for g in core.list_groups(request).groups]

    assert listed() == ["g"] and listed("stable") == ["g"] and listed("Empty") == []


def test_delete_groups() -> None:
    core, writer = make_coordinator()
    _stable_member(core)
    deleted = _one(core.delete_groups, (GroupId("g"), GroupId("nope")))
    assert [r.error_code for r in deleted.results] == [
        ErrorCode.non_empty_group,
        ErrorCode.group_id_not_found,
    ]
    simple, writer = make_coordinator()
    _one(simple.offset_commit, commit("", -1, {0: 4}), now_ms=0)
    deleted = _one(simple.delete_groups, (GroupId("g"),))
    assert deleted.results[0].error_code is ErrorCode.none and "g" not in simple.groups
    tombstones = [r.key for _, r in writer.records if r.value is None]
    assert tombstones == [OffsetCommitKey("g", "t", 0), GroupMetadataKey("g")]


def _offset_delete(core: GroupCoordinator, partition: int) -> Any:
    request = offset_delete_req.OffsetDeleteRequest(
        group_id=GroupId("g"),
        topics=(
            offset_delete_req.OffsetDeleteRequestTopic(
                name=TopicName("t"),
                partitions=(
                    offset_delete_req.OffsetDeleteRequestPartition(partition_index=i32(partition)),
                ),
            ),
        ),
    )
    return _one(core.offset_delete, request)


def test_offset_delete_refused_while_subscribed() -> None:
    core, _ = make_coordinator()
    member_id = _stable_member(core, join(protocol=_subscription("t")))
    _one(core.offset_commit, commit(member_id, 1, {0: 3}), now_ms=0)
    refused = _offset_delete(core, 0)
    assert refused.topics[0].partitions[0].error_code is ErrorCode.group_subscribed_to_topic
    _leave(core, member_id, None)
    assert _offset_delete(core, 0).topics[0].partitions[0].error_code is ErrorCode.none
    assert ("t", 0) not in core.groups["g"].offsets


def test_offsets_of_empty_groups_expire() -> None:
    core, writer = make_coordinator(offsets_retention_ms=1_000, retention_check_interval_ms=500)
    _one(core.offset_commit, commit("", -1, {0: 4}), now_ms=100)
    core.poll(1_000)
    assert core.groups["g"].offsets
    core.poll(1_500)
    assert "g" not in core.groups
    assert [r.key for _, r in writer.records[-2:]] == [
        OffsetCommitKey("g", "t", 0),
        GroupMetadataKey("g"),
    ]


def test_offsets_of_topics_a_stable_group_left_expire() -> None:
    core, _ = make_coordinator(offsets_retention_ms=1_000, retention_check_interval_ms=500)
    member_id = _stable_member(core, join(protocol=_subscription("t")))
    _one(core.offset_commit, commit(member_id, 1, {0: 4}), now_ms=0)
    core.poll(2_000)
    assert ("t", 0) in core.groups["g"].offsets  # still subscribed
    core.groups["g"].members[member_id].protocols = (("range", _subscription("other")),)
    core.poll(2_500)
    assert core.groups["g"].offsets == {} and core.groups["g"].state is GroupState.STABLE


def test_leave_of_an_unknown_group_answers_per_member() -> None:
    core, _ = make_coordinator()
    left = _leave(core, "m", None)
    assert left.error_code is ErrorCode.none
    assert [m.error_code for m in left.members] == [ErrorCode.unknown_member_id]
