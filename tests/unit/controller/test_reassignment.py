"""Partition reassignment on the controller (KIP-455): start, catch up through AlterPartition,
complete; cancel; Kafka's errors."""

from __future__ import annotations

from controller_harness import Harness

from strom.common import ErrorCode, TopicPartition
from strom.controller import (
    AlterPartitionItem,
    AlterPartitionRequest,
    CreatableTopic,
    CreateTopicsRequest,
    ReassignmentRequest,
    ReplicaAssignment,
)
from strom.metadata import PartitionRegistration

T0 = TopicPartition("t", 0)


def cluster() -> tuple[Harness, dict[int, int]]:
    """Brokers 1-4; topic t with partition 0 on (1, 2, 3)."""
    h = Harness()
    epochs = {broker_id: h.add_broker(broker_id) for broker_id in (1, 2, 3, 4)}
    request = CreateTopicsRequest(
        [CreatableTopic("t", assignments=[ReplicaAssignment(0, (1, 2, 3))])]
    )
    h.run(h.controller.create_topics(h.image, request))
    return h, epochs


def partition(h: Harness) -> PartitionRegistration:
    registration = h.image.topics.get_partition(T0)
    assert registration is not None
    return registration


def reassign(h: Harness, replicas: tuple[int, ...] | None, tp: TopicPartition = T0) -> ErrorCode:
    [result] = h.run(h.controller.alter_reassignments(h.image, [ReassignmentRequest(tp, replicas)]))
    return result.error.code


def expand_isr(h: Harness, epochs: dict[int, int], isr: tuple[int, ...]) -> None:
    current = partition(h)
    topic = h.image.topics.get_topic("t")
    assert topic is not None
    item = AlterPartitionItem(
        topic_id=topic.topic_id,
        partition=0,
        leader_epoch=current.leader_epoch,
        partition_epoch=current.partition_epoch,
        new_isr=tuple((b, epochs[b]) for b in isr),
    )
    leader = current.leader
    reply = h.run(
        h.controller.alter_partition(h.image, AlterPartitionRequest(leader, epochs[leader], [item]))
    )
    assert reply.results[0].error.code is ErrorCode.none


def test_moving_a_replica_adds_it_then_removes_the_old_one_once_it_is_in_sync() -> None:
    h, epochs = cluster()
    assert reassign(h, (4, 2, 3)) is ErrorCode.none
    moving = partition(h)
    assert (moving.replicas, moving.adding_replicas, moving.removing_replicas) == (
        (4, 2, 3, 1),
        (4,),
        (1,),
    )
    assert moving.leader == 1
    assert [tp for tp, _ in h.controller.list_reassignments(h.image, None)] == [T0]
    expand_isr(h, epochs, (1, 2, 3, 4))  # 4 caught up: the reassignment completes
    done = partition(h)
    assert (done.replicas, done.isr, done.adding_replicas, done.removing_replicas) == (
        (4, 2, 3),
        (2, 3, 4),
        (),
        (),
    )
    assert done.leader == 4  # the removed leader handed over, in a new epoch
    assert done.leader_epoch == moving.leader_epoch + 1
    assert h.controller.list_reassignments(h.image, None) == []


def test_removing_a_replica_only_completes_at_once() -> None:
    h, _ = cluster()
    assert reassign(h, (1, 2)) is ErrorCode.none
    done = partition(h)
    assert (done.replicas, done.isr, done.leader) == ((1, 2), (1, 2), 1)


def test_a_cancelled_reassignment_puts_the_original_replicas_back() -> None:
    h, _ = cluster()
    reassign(h, (4, 2, 3))
    assert reassign(h, None) is ErrorCode.none
    back = partition(h)
    # Kafka's revert: the replicas without the added ones, in the order of the move.
    assert (back.replicas, back.adding_replicas, back.removing_replicas) == ((2, 3, 1), (), ())
    assert reassign(h, None) is ErrorCode.no_reassignment_in_progress


def test_bad_reassignments_get_kafkas_errors_and_change_nothing() -> None:
    h, _ = cluster()
    before = partition(h)
    assert reassign(h, ()) is ErrorCode.invalid_replica_assignment
    assert reassign(h, (1, 1, 2)) is ErrorCode.invalid_replica_assignment
    assert reassign(h, (1, 2, 9)) is ErrorCode.invalid_replica_assignment
    assert reassign(h, (1, 2), TopicPartition("nope", 0)) is ErrorCode.unknown_topic_or_partition
    assert reassign(h, (1, 2), TopicPartition("t", 5)) is ErrorCode.unknown_topic_or_partition
    assert partition(h) == before
