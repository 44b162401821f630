"""Transactional offset commits in the group coordinator core: pending until the producer's
marker, committed or dropped by it, replayed from the log, seen by require_stable fetches,
validated as Kafka validates them."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from group_harness import MemoryWriter, commit, join, make_coordinator, sync
from kio.schema.offset_fetch.v9 import request as fetch_req
from kio.schema.txn_offset_commit.v5 import request as txn_req
from kio.schema.types import GroupId, ProducerId, TopicName, TransactionalId
from kio.static.primitive import i16, i32, i64

from strom.common import ErrorCode
from strom.coordinator.group import (
    CoordinatorRecord,
    CoordinatorSettings,
    GroupCoordinator,
    partition_for,
)
from strom.coordinator.group.records import GroupMetadataKey, OffsetCommitKey

PRODUCER = 7
EPOCH = 2
PARTITION = partition_for("g", 4)  # of __consumer_offsets, where group "g" lives


def _one(call: Any, *args: Any, **kwargs: Any) -> Any:
    out: list[Any] = []
    call(*args, reply=out.append, **kwargs)
    assert len(out) == 1, out
    return out[0]


def _txn_commit(
    offsets: dict[int, int],
    *,
    group: str = "g",
    producer_id: int = PRODUCER,
    generation: int = -1,
    member_id: str = "",
    instance_id: str | None = None,
    topic: str = "t",
) -> txn_req.TxnOffsetCommitRequest:
    return txn_req.TxnOffsetCommitRequest(
        transactional_id=TransactionalId("tx"),
        group_id=GroupId(group),
        producer_id=ProducerId(producer_id),
        producer_epoch=i16(EPOCH),
        generation_id=i32(generation),
        member_id=member_id,
        group_instance_id=instance_id,
        topics=(
            txn_req.TxnOffsetCommitRequestTopic(
                name=TopicName(topic),
                partitions=tuple(
                    txn_req.TxnOffsetCommitRequestPartition(
                        partition_index=i32(p), committed_offset=i64(o), committed_metadata="m"
                    )
                    for p, o in offsets.items()
                ),
            ),
        ),
    )


def _errors(response: Any) -> list[ErrorCode]:
    return [p.error_code for t in response.topics for p in t.partitions]


def _commit_txn(core: GroupCoordinator, request: txn_req.TxnOffsetCommitRequest) -> None:
    assert _errors(_one(core.txn_offset_commit, request, now_ms=5)) == [ErrorCode.none] * sum(
        len(t.partitions) for t in request.topics
    )


def _fetch(
    core: GroupCoordinator, partitions: list[int] | None, *, stable: bool, group: str = "g"
) -> list[tuple[int, int, ErrorCode]]:
    """(partition, committed offset, error) of topic t."""
    topics = (
        None
        if partitions is None
        else (
            fetch_req.OffsetFetchRequestTopics(
                name=TopicName("t"), partition_indexes=tuple(i32(p) for p in partitions)
            ),
        )
    )
    response = core.offset_fetch(
        fetch_req.OffsetFetchRequest(
            groups=(fetch_req.OffsetFetchRequestGroup(group_id=GroupId(group), topics=topics),),
            require_stable=stable,
        )
    )
    return [
        (int(p.partition_index), int(p.committed_offset), p.error_code)
        for t in response.groups[0].topics
        for p in t.partitions
    ]


def test_offsets_wait_for_the_commit_marker() -> None:
    core, writer = make_coordinator()
    _one(core.offset_commit, commit("", -1, {0: 3}), now_ms=0)
    _commit_txn(core, _txn_commit({0: 10, 1: 20}))
    assert writer.producers[-1] == (PRODUCER, EPOCH)
    assert [(p, r.key) for p, r in writer.records[-2:]] == [
        (PARTITION, OffsetCommitKey("g", "t", 0)),
        (PARTITION, OffsetCommitKey("g", "t", 1)),
    ]
    assert _fetch(core, [0, 1], stable=False) == [
        (0, 3, ErrorCode.none),
        (1, -1, ErrorCode.none),
    ]
    assert _fetch(core, [0, 1, 2], stable=True) == [
        (0, -1, ErrorCode.unstable_offset_commit),
        (1, -1, ErrorCode.unstable_offset_commit),
        (2, -1, ErrorCode.none),
    ]
    assert _fetch(core, None, stable=True) == [(0, -1, ErrorCode.unstable_offset_commit)]
    core.complete_transaction(PARTITION + 1, PRODUCER, commit=True)  # another partition's
    assert _fetch(core, [0], stable=True) == [(0, -1, ErrorCode.unstable_offset_commit)]
    core.complete_transaction(PARTITION, PRODUCER, commit=True)
    assert _fetch(core, [0, 1], stable=True) == [(0, 10, ErrorCode.none), (1, 20, ErrorCode.none)]
    assert core.groups["g"].offsets[("t", 1)].metadata == "m"


def test_abort_drops_the_offsets() -> None:
    core, _ = make_coordinator()
    _one(core.offset_commit, commit("", -1, {0: 3}), now_ms=0)
    _commit_txn(core, _txn_commit({0: 10}))
    core.complete_transaction(PARTITION, PRODUCER, commit=False)
    assert _fetch(core, [0], stable=True) == [(0, 3, ErrorCode.none)]
    core.complete_transaction(PARTITION, PRODUCER, commit=True)  # a second marker: nothing left
    assert _fetch(core, [0], stable=True) == [(0, 3, ErrorCode.none)]


def test_producers_and_groups_are_decided_apart() -> None:
    core, _ = make_coordinator()
    _commit_txn(core, _txn_commit({0: 10}))
    _commit_txn(core, _txn_commit({1: 11}, producer_id=8))
    _commit_txn(core, _txn_commit({2: 12}, group="h"))  # another __consumer_offsets partition
    core.complete_transaction(PARTITION, PRODUCER, commit=True)
    assert _fetch(core, [0, 1], stable=True) == [
        (0, 10, ErrorCode.none),
        (1, -1, ErrorCode.unstable_offset_commit),
    ]
    assert _fetch(core, [2], stable=True, group="h") == [(2, -1, ErrorCode.unstable_offset_commit)]
    core.complete_transaction(partition_for("h", 4), PRODUCER, commit=True)
    assert _fetch(core, [2], stable=True, group="h") == [(2, 12, ErrorCode.none)]


def test_the_later_write_of_a_partition_wins() -> None:
    core, _ = make_coordinator()
    _commit_txn(core, _txn_commit({0: 10, 1: 11}))
    _one(core.offset_commit, commit("", -1, {0: 4}), now_ms=6)  # after the txn's record
    core.complete_transaction(PARTITION, PRODUCER, commit=True)
    offsets = core.groups["g"].offsets
    assert (offsets[("t", 0)].offset, offsets[("t", 1)].offset) == (4, 11)
    _one(core.offset_commit, commit("", -1, {0: 5}), now_ms=7)
    _commit_txn(core, _txn_commit({0: 12}))  # after the plain commit: wins on COMMIT
    core.complete_transaction(PARTITION, PRODUCER, commit=True)
    assert core.groups["g"].offsets[("t", 0)].offset == 12


def test_replay_keeps_open_transactions_pending() -> None:
    core, writer = make_coordinator()
    _one(core.offset_commit, commit("", -1, {0: 3}), now_ms=0)
    _commit_txn(core, _txn_commit({0: 10}))  # to be committed
    _commit_txn(core, _txn_commit({1: 11}, producer_id=8))  # stays open
    fresh, _ = make_coordinator()
    fresh.begin_loading(4)
    batches = iter(writer.producers)
    for _, record in writer.records:
        producer_id, _epoch = next(batches)
        fresh.replay(record, producer_id=producer_id)
        if producer_id == PRODUCER:
            fresh.complete_transaction(PARTITION, PRODUCER, commit=True)
    for partition in range(4):
        fresh.finish_loading(partition, 10)
    assert _fetch(fresh, [0, 1], stable=True) == [
        (0, 10, ErrorCode.none),
        (1, -1, ErrorCode.unstable_offset_commit),
    ]
    fresh.complete_transaction(PARTITION, 8, commit=False)
    assert _fetch(fresh, [1], stable=True) == [(1, -1, ErrorCode.none)]


def test_a_tombstone_in_the_log_cancels_a_pending_offset() -> None:
    core, _ = make_coordinator()
    _commit_txn(core, _txn_commit({0: 10}))
    core.replay(CoordinatorRecord(OffsetCommitKey("g", "t", 0), None))
    core.complete_transaction(PARTITION, PRODUCER, commit=True)
    assert _fetch(core, [0], stable=True) == [(0, -1, ErrorCode.none)]


def _stable_group(core: GroupCoordinator, instance_id: str | None = None) -> str:
    joined = _one(
        core.join_group,
        join(instance_id=instance_id),
        client_id="c",
        client_host="/h",
        require_known_member_id=False,
        now_ms=0,
    )
    member_id: str = joined.member_id
    _one(core.sync_group, sync(member_id, joined.generation_id, {member_id: b"A"}), now_ms=0)
    return member_id


def test_validation_as_kafka() -> None:
    core, writer = make_coordinator()

    def answer(request: txn_req.TxnOffsetCommitRequest, **kwargs: Any) -> list[ErrorCode]:
        return _errors(_one(core.txn_offset_commit, request, now_ms=5, **kwargs))

    assert answer(_txn_commit({0: 1}, generation=1)) == [ErrorCode.illegal_generation]
    assert answer(_txn_commit({0: 1}, group="")) == [ErrorCode.invalid_group_id]
    member = _stable_group(core, instance_id="i")
    assert answer(_txn_commit({0: 1}, generation=1, member_id="x")) == [ErrorCode.unknown_member_id]
    assert answer(_txn_commit({0: 1}, generation=2, member_id=member)) == [
        ErrorCode.illegal_generation
    ]
    fenced = _txn_commit({0: 1}, generation=1, member_id="x", instance_id="i")
    assert answer(fenced) == [ErrorCode.fenced_instance_id]
    assert answer(_txn_commit({0: 1}, generation=1, member_id=member, instance_id="i")) == [
        ErrorCode.none
    ]
    assert answer(_txn_commit({0: 1})) == [ErrorCode.none]  # v0-v2: no member, any state
    assert answer(_txn_commit({0: 1}, producer_id=-1)) == [ErrorCode.invalid_txn_state]
    unknown = dataclasses.replace(
        _txn_commit({0: 1}),
        topics=(_txn_commit({0: 1}).topics[0], _txn_commit({9: 1}, topic="nope").topics[0]),
    )
    assert answer(unknown) == [ErrorCode.none, ErrorCode.unknown_topic_or_partition]
    checked: list[int] = []

    def verify(partition: int) -> ErrorCode:
        checked.append(partition)
        return ErrorCode.invalid_txn_state

    written = len(writer.records)
    assert answer(_txn_commit({0: 1}), verify=verify) == [ErrorCode.invalid_txn_state]
    assert checked == [PARTITION] and len(writer.records) == written


def test_not_coordinator_before_the_offsets_topic_and_while_loading() -> None:
    core, _ = make_coordinator()
    core.begin_loading(4)
    loading = _one(core.txn_offset_commit, _txn_commit({0: 1}), now_ms=0)
    assert _errors(loading) == [ErrorCode.coordinator_load_in_progress]
    fresh = GroupCoordinator(
        settings=CoordinatorSettings(),
        writer=MemoryWriter(),
        random=random.Random(1),
        topic_exists=lambda topic, partition: True,
    )
    missing = _one(fresh.txn_offset_commit, _txn_commit({0: 1}), now_ms=0)
    assert _errors(missing) == [ErrorCode.not_coordinator]


def test_delete_group_with_pending_offsets() -> None:
    core, writer = make_coordinator()
    _one(core.offset_commit, commit("", -1, {0: 3}), now_ms=0)
    _commit_txn(core, _txn_commit({1: 10}))
    deleted = _one(core.delete_groups, (GroupId("g"),))
    assert deleted.results[0].error_code is ErrorCode.none  # Kafka: pending offsets do not block
    tombstones = {r.key for _, r in writer.records if r.value is None}
    assert tombstones == {
        OffsetCommitKey("g", "t", 0),
        OffsetCommitKey("g", "t", 1),
        GroupMetadataKey("g"),
    }
    core.complete_transaction(PARTITION, PRODUCER, commit=True)
    assert _fetch(core, [0, 1], stable=True) == [(0, -1, ErrorCode.none), (1, -1, ErrorCode.none)]


def test_pending_offsets_hold_back_expiry() -> None:
    core, _ = make_coordinator(offsets_retention_ms=1_000, retention_check_interval_ms=500)
    _one(core.offset_commit, commit("", -1, {0: 3, 1: 4}), now_ms=0)
    _commit_txn(core, _txn_commit({0: 10}))
    core.poll(1_500)
    assert list(core.groups["g"].offsets) == [("t", 0)]  # ("t", 1) expired
    core.complete_transaction(PARTITION, PRODUCER, commit=False)
    core.poll(2_000)
    assert "g" not in core.groups
