"""The classic group coordinator core: joins, syncs, fencing, static members, offsets."""

from __future__ import annotations

from typing import Any

import pytest
from group_harness import commit, join, make_coordinator, sync
from kio.schema.heartbeat.v4 import request as heartbeat_req
from kio.schema.types import GroupId
from kio.static.primitive import i32

from strom.common import ErrorCode
from strom.coordinator.group import GroupState
from strom.coordinator.group.state import check_transition


def _one(call: Any, *args: Any, **kwargs: Any) -> Any:
    out: list[Any] = []
    call(*args, reply=out.append, **kwargs)
    assert len(out) == 1, out
    return out[0]


def test_member_id_required_then_join_sync_stable() -> None:
    core, writer = make_coordinator()
    first = _one(
        core.join_group,
        join(),
        client_id="c",
        client_host="/h",
        require_known_member_id=True,
        now_ms=0,
    )
    assert first.error_code is ErrorCode.member_id_required
    assert first.member_id.startswith("c-")
    joined = _one(
        core.join_group,
        join(first.member_id),
        client_id="c",
        client_host="/h",
        require_known_member_id=True,
        now_ms=1,
    )
    assert joined.error_code is ErrorCode.none
    assert joined.generation_id == 1 and joined.leader == first.member_id
    synced = _one(core.sync_group, sync(first.member_id, 1, {first.member_id: b"A"}), now_ms=2)
    assert synced.assignment == b"A"
    assert core.groups["g"].state is GroupState.STABLE
    assert writer.records  # the group metadata was written


def test_fenced_generation_commit_refused_and_simple_group_accepted() -> None:
    core, _ = make_coordinator()
    joined = _one(
        core.join_group,
        join(),
        client_id="c",
        client_host="/h",
        require_known_member_id=False,
        now_ms=0,
    )
    member = joined.member_id
    _one(core.sync_group, sync(member, 1, {member: b""}), now_ms=1)
    stale = _one(core.offset_commit, commit(member, 0, {0: 5}), now_ms=2)
    assert stale.topics[0].partitions[0].error_code is ErrorCode.illegal_generation
    ok = _one(core.offset_commit, commit(member, 1, {0: 5, 9: 1}), now_ms=2)
    assert [p.error_code for p in ok.topics[0].partitions] == [
        ErrorCode.none,
        ErrorCode.unknown_topic_or_partition,
    ]
    unknown = _one(core.offset_commit, commit("", -1, {0: 6}), now_ms=3)
    assert unknown.topics[0].partitions[0].error_code is ErrorCode.unknown_member_id
    simple, _ = make_coordinator()
    accepted = _one(simple.offset_commit, commit("", -1, {1: 3}), now_ms=0)
    assert accepted.topics[0].partitions[0].error_code is ErrorCode.none
    assert simple.groups["g"].offsets[("t", 1)].offset == 3


def test_session_expiry_removes_member_and_heartbeat_says_rebalance() -> None:
    core, _ = make_coordinator()
    a = _one(
        core.join_group,
        join(),
        client_id="a",
        client_host="/h",
        require_known_member_id=False,
        now_ms=0,
    )
    _one(core.sync_group, sync(a.member_id, 1, {a.member_id: b""}), now_ms=0)
    out: list[Any] = []
    core.join_group(
        join(),
        client_id="b",
        client_host="/h",
        require_known_member_id=False,
        now_ms=1,
        reply=out.append,
    )
    assert core.groups["g"].state is GroupState.PREPARING_REBALANCE
    beat = core.heartbeat(
        heartbeat_req.HeartbeatRequest(
            group_id=GroupId("g"), generation_id=i32(1), member_id=a.member_id
        ),
        now_ms=2,
    )
    assert beat.error_code is ErrorCode.rebalance_in_progress
    core.poll(40_000)  # a never rejoined: removed when the rebalance times out
    assert out and out[0].error_code is ErrorCode.none and out[0].generation_id == 2
    assert a.member_id not in core.groups["g"].members


def test_static_member_replaced_without_rebalance() -> None:
    core, _ = make_coordinator()
    a = _one(
        core.join_group,
        join(instance_id="i"),
        client_id="a",
        client_host="/h",
        require_known_member_id=True,
        now_ms=0,
    )
    _one(core.sync_group, sync(a.member_id, 1, {a.member_id: b"X"}), now_ms=0)
    again = _one(
        core.join_group,
        join(instance_id="i"),
        client_id="a",
        client_host="/h",
        require_known_member_id=True,
        now_ms=5,
    )
    assert again.error_code is ErrorCode.none and again.generation_id == 1
    assert core.groups["g"].state is GroupState.STABLE
    old = _one(core.sync_group, sync(a.member_id, 1), now_ms=6)
    assert old.error_code is ErrorCode.unknown_member_id
    new = _one(core.sync_group, sync(again.member_id, 1), now_ms=6)
    assert new.assignment == b"X"


def test_replay_restores_offsets_and_static_members() -> None:
    core, writer = make_coordinator()
    a = _one(
        core.join_group,
        join(instance_id="i"),
        client_id="a",
        client_host="/h",
        require_known_member_id=True,
        now_ms=0,
    )
    _one(core.sync_group, sync(a.member_id, 1, {a.member_id: b"X"}), now_ms=0)
    _one(core.offset_commit, commit(a.member_id, 1, {2: 11}), now_ms=1)
    fresh, _ = make_coordinator()
    fresh.begin_loading(4)
    for _, record in writer.records:
        fresh.replay(record)
    for partition in range(4):
        fresh.finish_loading(partition, 10)
    group = fresh.groups["g"]
    assert group.state is GroupState.STABLE and group.static_members == {"i": a.member_id}
    assert group.offsets[("t", 2)].offset == 11


def test_invalid_transition_refused() -> None:
    with pytest.raises(ValueError):
        check_transition(GroupState.EMPTY, GroupState.STABLE)


def test_a_partition_led_elsewhere_is_unloaded_and_a_new_one_loads() -> None:
    """Coordinators follow leadership: the groups of a partition another broker now leads go,
    with their timers; a partition this broker comes to lead loads before it serves."""
    core, _ = make_coordinator()
    joined = _one(
        core.join_group,
        join(),
        client_id="a",
        client_host="/h",
        require_known_member_id=False,
        now_ms=0,
    )
    _one(core.sync_group, sync(joined.member_id, 1, {joined.member_id: b""}), now_ms=0)
    partition = core.partition_of("g")
    assert core.unload_partition(partition) == {"g"}
    assert "g" not in core.groups
    # Only the coordinator's own retention check is left: the member's session timer went.
    assert core.next_deadline() == core.settings.retention_check_interval_ms
    assert core.group_error("g") is ErrorCode.not_coordinator
    core.begin_loading_partition(partition)
    assert core.group_error("g") is ErrorCode.coordinator_load_in_progress
    core.finish_loading(partition, now_ms=1)
    assert core.group_error("g") is ErrorCode.none
