"""Leader elections and ISR changes as brokers are fenced, re-register and are unfenced."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from controller_harness import Harness

from strom.common import ErrorCode, TopicPartition
from strom.controller import (
    SUPPORTED_FEATURES,
    AlterableConfig,
    AlterPartitionItem,
    AlterPartitionRequest,
    BrokerRegistrationRequest,
    ControllerResult,
    CreatableTopic,
    CreateTopicsRequest,
    ElectionType,
    ElectLeadersRequest,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResource,
    IsrChangeResult,
    ReplicaAssignment,
)
from strom.metadata import (
    NO_LEADER,
    BrokerEndpoint,
    ConfigResourceType,
    FeatureLevelRecord,
    LeaderRecoveryState,
    PartitionChangeRecord,
    PartitionRegistration,
)
from strom.replication.partition_replication import IsrChange
from strom.server.controller.handlers.alter_partition import parse_alter_partition
from strom.server.replica.alter_partition_manager import AlterPartitionManager


def cluster(**configs: str) -> tuple[Harness, dict[int, int]]:
    """Brokers 1-3 and topic t: partition 0 on (1, 2, 3), partition 1 on (2, 3, 1)."""
    h = Harness()
    epochs = {broker_id: h.add_broker(broker_id) for broker_id in (1, 2, 3)}
    h.run(
        h.controller.create_topics(
            h.image,
            CreateTopicsRequest(
                [
                    CreatableTopic(
                        "t",
                        assignments=[
                            ReplicaAssignment(0, (1, 2, 3)),
                            ReplicaAssignment(1, (2, 3, 1)),
                        ],
                        configs={name.replace("_", "."): value for name, value in configs.items()},
                    )
                ]
            ),
        )
    )
    return h, epochs


def partition(h: Harness, index: int) -> PartitionRegistration:
    registration = h.image.topics.get_partition(TopicPartition("t", index))
    assert registration is not None
    return registration


def fence(h: Harness, epochs: dict[int, int], broker_id: int) -> None:
    assert h.run(
        h.controller.fence_broker(h.image, broker_id=broker_id, broker_epoch=epochs[broker_id])
    ).is_success


def unfence(h: Harness, epochs: dict[int, int], broker_id: int) -> None:
    assert h.run(
        h.controller.unfence_broker(h.image, broker_id=broker_id, broker_epoch=epochs[broker_id])
    ).is_success


def test_a_fenced_leader_hands_over_to_the_next_isr_replica() -> None:
    h, epochs = cluster()
    before = partition(h, 0)
    fence(h, epochs, 1)
    after = partition(h, 0)
    assert (after.leader, after.isr) == (2, (2, 3))
    assert after.leader_epoch == before.leader_epoch + 1
    assert after.partition_epoch == before.partition_epoch + 1


def test_a_fenced_follower_leaves_the_isr_without_a_new_leader_epoch() -> None:
    h, epochs = cluster()
    before = partition(h, 0)
    fence(h, epochs, 3)
    after = partition(h, 0)
    assert (after.leader, after.isr, after.leader_epoch) == (1, (1, 2), before.leader_epoch)
    assert partition(h, 1).isr == (2, 1)


def test_the_last_isr_member_becomes_eligible_and_leads_again_when_it_returns() -> None:
    h, epochs = cluster()
    fence(h, epochs, 1)
    fence(h, epochs, 2)
    assert partition(h, 0).eligible_leader_replicas == ()  # ISR (3,) meets min ISR 1
    fence(h, epochs, 3)
    offline = partition(h, 0)
    assert (offline.leader, offline.isr) == (NO_LEADER, ())
    assert (offline.eligible_leader_replicas, offline.last_known_elr) == ((3,), (3,))
    unfence(h, epochs, 2)  # neither in the ISR nor eligible: would lose committed records
    assert partition(h, 0).leader == NO_LEADER
    unfence(h, epochs, 3)
    back = partition(h, 0)
    assert (back.leader, back.isr, back.eligible_leader_replicas) == (3, (3,), ())
    assert back.last_known_elr == ()
    assert back.leader_epoch == offline.leader_epoch + 1


def test_below_min_isr_the_replicas_leaving_the_isr_are_eligible_leaders() -> None:
    h, epochs = cluster(min_insync_replicas="2")
    fence(h, epochs, 3)
    assert (partition(h, 0).isr, partition(h, 0).eligible_leader_replicas) == ((1, 2), ())
    fence(h, epochs, 2)  # below min ISR: the high watermark stops, 2 holds every commit
    assert (partition(h, 0).isr, partition(h, 0).eligible_leader_replicas) == ((1,), (2,))
    fence(h, epochs, 1)
    offline = partition(h, 0)
    assert (offline.leader, offline.isr, offline.eligible_leader_replicas) == (
        NO_LEADER,
        (),
        (1, 2),
    )
    unfence(h, epochs, 3)  # left while the ISR met min ISR: it may miss commits
    assert partition(h, 0).leader == NO_LEADER
    unfence(h, epochs, 2)  # eligible: leads, alone in the ISR
    back = partition(h, 0)
    assert (back.leader, back.isr, back.eligible_leader_replicas) == (2, (2,), (1,))
    topic = h.image.topics.get_topic("t")
    assert topic is not None
    h.run(ControllerResult([PartitionChangeRecord(0, topic.topic_id, isr=(2, 3))], None))
    unfence(h, epochs, 1)
    assert alter_isr(h, epochs, (2, 3, 1), sender=2).registration is not None
    assert partition(h, 0).eligible_leader_replicas == ()  # min ISR met again


def test_alter_partition_below_min_isr_keeps_the_removed_replica_eligible() -> None:
    h, epochs = cluster(min_insync_replicas="2")
    shrunk = alter_isr(h, epochs, (1, 2)).registration
    assert shrunk is not None and shrunk.eligible_leader_replicas == ()
    shrunk = alter_isr(h, epochs, (1,)).registration
    assert shrunk is not None and shrunk.eligible_leader_replicas == (2,)
    grown = alter_isr(h, epochs, (1, 3)).registration
    assert grown is not None and (grown.isr, grown.eligible_leader_replicas) == ((1, 3), ())


def test_changing_min_isr_forgets_the_eligible_leaders() -> None:
    """Chosen under the old min.insync.replicas, they may miss commits under the new one."""
    h, epochs = cluster(min_insync_replicas="3")
    fence(h, epochs, 3)
    assert partition(h, 0).eligible_leader_replicas == (3,)
    alter = IncrementalAlterConfigsRequest(
        [
            IncrementalAlterConfigsResource(
                ConfigResourceType.TOPIC, "t", [AlterableConfig("min.insync.replicas", "2")]
            )
        ]
    )
    assert all(
        r.error.is_success for r in h.run(h.controller.incremental_alter_configs(h.image, alter))
    )
    assert partition(h, 0).eligible_leader_replicas == ()
    assert partition(h, 0).isr == (1, 2)


def register_again(h: Harness, broker_id: int, *, previous_broker_epoch: int) -> int:
    reply = h.run(
        h.controller.register_broker(
            h.image,
            BrokerRegistrationRequest(
                broker_id=broker_id,
                incarnation_id=uuid.uuid4(),
                endpoints=[BrokerEndpoint("PLAINTEXT", "localhost", 9092 + broker_id)],
                features=SUPPORTED_FEATURES,
                previous_broker_epoch=previous_broker_epoch,
            ),
        )
    )
    assert reply.error.is_success
    return reply.broker_epoch


def test_a_replica_back_from_an_unclean_shutdown_is_no_longer_eligible() -> None:
    h, epochs = cluster(min_insync_replicas="2")
    for broker_id in (3, 2, 1):
        fence(h, epochs, broker_id)
    assert partition(h, 0).eligible_leader_replicas == (1, 2)
    epochs[1] = register_again(h, 1, previous_broker_epoch=epochs[1])  # a clean restart
    assert partition(h, 0).eligible_leader_replicas == (1, 2)
    epochs[2] = register_again(h, 2, previous_broker_epoch=-1)  # killed: may have lost records
    assert partition(h, 0).eligible_leader_replicas == (1,)
    unfence(h, epochs, 2)
    assert partition(h, 0).leader == NO_LEADER
    unfence(h, epochs, 1)
    assert (partition(h, 0).leader, partition(h, 0).isr) == (1, (1,))


def test_the_last_known_leader_leads_when_no_replica_is_eligible() -> None:
    """A lone replica killed and restarted (a single node after kill -9) leads again, as
    Kafka's controllers did before KIP-966."""
    h, epochs = cluster()
    fence(h, epochs, 1)
    fence(h, epochs, 2)
    fence(h, epochs, 3)
    epochs[3] = register_again(h, 3, previous_broker_epoch=-1)
    offline = partition(h, 0)
    assert (offline.eligible_leader_replicas, offline.last_known_elr) == ((), (3,))
    unfence(h, epochs, 3)
    assert (partition(h, 0).leader, partition(h, 0).isr) == (3, (3,))
    assert partition(h, 0).last_known_elr == ()


def test_without_the_elr_feature_the_last_isr_member_stays() -> None:
    h, epochs = cluster()
    h.run(ControllerResult([FeatureLevelRecord("eligible.leader.replicas.version", 0)], None))
    for broker_id in (1, 2, 3):
        fence(h, epochs, broker_id)
    offline = partition(h, 0)
    assert (offline.leader, offline.isr, offline.eligible_leader_replicas) == (NO_LEADER, (3,), ())
    unfence(h, epochs, 3)
    assert (partition(h, 0).leader, partition(h, 0).isr) == (3, (3,))


def test_a_topic_with_unclean_leader_election_elects_any_replica_that_returns() -> None:
    h, epochs = cluster(unclean_leader_election_enable="true")
    for broker_id in (1, 2, 3):
        fence(h, epochs, broker_id)
    unfence(h, epochs, 1)  # outside the ISR and the ELR: the topic accepts the loss
    back = partition(h, 0)
    assert (back.leader, back.isr, back.eligible_leader_replicas) == (1, (1,), ())
    assert back.leader_recovery_state == LeaderRecoveryState.RECOVERING  # KIP-704


def test_a_new_session_of_a_leader_moves_its_partitions_off_it() -> None:
    h, _ = cluster()
    h.run(
        h.controller.register_broker(
            h.image,
            BrokerRegistrationRequest(
                broker_id=1,
                incarnation_id=uuid.uuid4(),
                endpoints=[BrokerEndpoint("PLAINTEXT", "localhost", 9093)],
                features=SUPPORTED_FEATURES,
            ),
        )
    )
    assert (partition(h, 0).leader, partition(h, 0).isr) == (2, (2, 3))


def elect(
    h: Harness, election: ElectionType, *partitions: TopicPartition
) -> dict[TopicPartition, ErrorCode]:
    results = h.run(
        h.controller.elect_leaders(
            h.image, ElectLeadersRequest(election, list(partitions) if partitions else None)
        )
    )
    return {result.partition: result.error.code for result in results}


def test_a_preferred_election_gives_a_partition_back_to_its_first_replica() -> None:
    h, epochs = cluster()
    fence(h, epochs, 1)
    unfence(h, epochs, 1)  # back, but out of the ISR: not eligible yet
    p0, p1 = TopicPartition("t", 0), TopicPartition("t", 1)
    assert elect(h, ElectionType.PREFERRED, p0, p1) == {
        p0: ErrorCode.preferred_leader_not_available,
        p1: ErrorCode.election_not_needed,
    }
    topic = h.image.topics.get_topic("t")
    assert topic is not None
    rejoined = PartitionChangeRecord(0, topic.topic_id, isr=(1, 2, 3))
    h.run(ControllerResult([rejoined], None))  # caught up, back in the ISR (AlterPartition)
    assert elect(h, ElectionType.PREFERRED, p0) == {p0: ErrorCode.none}
    assert partition(h, 0).leader == 1
    assert elect(h, ElectionType.PREFERRED) == {}  # all partitions: only those elected or failed


def test_leader_balancing_moves_only_partitions_whose_preferred_replica_can_lead() -> None:
    h, epochs = cluster()
    fence(h, epochs, 1)
    unfence(h, epochs, 1)
    assert h.run(h.controller.balance_leaders(h.image)) == 0  # 1 is not in the ISR yet
    topic = h.image.topics.get_topic("t")
    assert topic is not None
    h.run(ControllerResult([PartitionChangeRecord(0, topic.topic_id, isr=(1, 2, 3))], None))
    assert h.run(h.controller.balance_leaders(h.image)) == 1
    assert (partition(h, 0).leader, partition(h, 1).leader) == (1, 2)
    assert h.run(h.controller.balance_leaders(h.image)) == 0


def test_an_unclean_election_takes_a_live_replica_outside_the_isr() -> None:
    h, epochs = cluster()
    for broker_id in (1, 2, 3):
        fence(h, epochs, broker_id)
    unfence(h, epochs, 1)  # not the last ISR member (3): a clean election cannot use it
    p0 = TopicPartition("t", 0)
    assert partition(h, 0).leader == NO_LEADER
    assert elect(h, ElectionType.UNCLEAN, p0) == {p0: ErrorCode.none}
    assert (partition(h, 0).leader, partition(h, 0).isr) == (1, (1,))
    assert partition(h, 0).leader_recovery_state == LeaderRecoveryState.RECOVERING
    assert elect(h, ElectionType.UNCLEAN, p0) == {p0: ErrorCode.election_not_needed}
    missing = TopicPartition("nope", 0)
    assert elect(h, ElectionType.UNCLEAN, missing) == {
        missing: ErrorCode.unknown_topic_or_partition
    }


def alter_isr(
    h: Harness,
    epochs: dict[int, int],
    isr: tuple[int, ...],
    *,
    sender: int = 1,
    leader_epoch: int | None = None,
    partition_epoch: int | None = None,
    member_epochs: dict[int, int] | None = None,
    recovery: int = LeaderRecoveryState.RECOVERED,
) -> IsrChangeResult:
    current = partition(h, 0)
    topic = h.image.topics.get_topic("t")
    assert topic is not None
    item = AlterPartitionItem(
        topic_id=topic.topic_id,
        partition=0,
        leader_epoch=current.leader_epoch if leader_epoch is None else leader_epoch,
        partition_epoch=current.partition_epoch if partition_epoch is None else partition_epoch,
        new_isr=tuple((b, (member_epochs or epochs).get(b, -1)) for b in isr),
        leader_recovery_state=recovery,
    )
    reply = h.run(
        h.controller.alter_partition(h.image, AlterPartitionRequest(sender, epochs[sender], [item]))
    )
    assert reply.error.is_success
    (result,) = reply.results
    return result


def test_alter_partition_shrinks_and_expands_the_isr() -> None:
    h, epochs = cluster()
    before = partition(h, 0)
    shrunk = alter_isr(h, epochs, (1, 2))
    assert shrunk.error.is_success and shrunk.registration is not None
    assert (shrunk.registration.isr, shrunk.registration.partition_epoch) == (
        (1, 2),
        before.partition_epoch + 1,
    )
    assert partition(h, 0) == shrunk.registration
    assert partition(h, 0).leader_epoch == before.leader_epoch  # an ISR change keeps the epoch
    assert alter_isr(h, epochs, (1, 2, 3)).registration.isr == (1, 2, 3)  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("changes", "code"),
    [
        ({"sender": 2}, ErrorCode.not_leader_or_follower),
        ({"leader_epoch": 99}, ErrorCode.fenced_leader_epoch),
        ({"partition_epoch": 99}, ErrorCode.invalid_update_version),
        ({"isr": (2, 3)}, ErrorCode.invalid_request),  # leaves out the leader
        ({"isr": (1, 4)}, ErrorCode.invalid_request),  # not a replica
        ({"member_epochs": {1: 0, 2: 12345, 3: 0}}, ErrorCode.ineligible_replica),
        ({"recovery": LeaderRecoveryState.RECOVERING}, ErrorCode.invalid_request),
        ({"recovery": 7}, ErrorCode.invalid_request),
    ],
)
def test_alter_partition_refusals(changes: dict[str, Any], code: ErrorCode) -> None:
    h, epochs = cluster()
    isr = changes.pop("isr", (1, 2))
    if "member_epochs" in changes:
        changes["member_epochs"] = {**changes["member_epochs"], 1: epochs[1]}
    before = h.image
    result = alter_isr(h, epochs, isr, **changes)
    assert result.error.code is code, result.error
    assert h.image is before


def test_a_leader_recovering_from_an_unclean_election_reports_recovered_to_grow_its_isr() -> None:
    """KIP-704, as Kafka's controller: while RECOVERING, an ISR beyond the leader is refused
    unless the leader says RECOVERED, which ends the recovery; it never goes back."""
    h, epochs = cluster(unclean_leader_election_enable="true")
    for broker_id in (1, 2, 3):
        fence(h, epochs, broker_id)
    for broker_id in (1, 2, 3):
        unfence(h, epochs, broker_id)
    assert (partition(h, 0).leader, partition(h, 0).isr) == (1, (1,))
    assert partition(h, 0).leader_recovery_state == LeaderRecoveryState.RECOVERING
    refused = alter_isr(h, epochs, (1, 2), recovery=LeaderRecoveryState.RECOVERING)
    assert refused.error.code is ErrorCode.invalid_request
    still = alter_isr(h, epochs, (1,), recovery=LeaderRecoveryState.RECOVERING)
    assert still.error.is_success
    assert partition(h, 0).leader_recovery_state == LeaderRecoveryState.RECOVERING
    grown = alter_isr(h, epochs, (1, 2))
    assert grown.error.is_success and grown.registration is not None
    assert grown.registration.isr == (1, 2)
    assert grown.registration.leader_recovery_state == LeaderRecoveryState.RECOVERED
    back = alter_isr(h, epochs, (1,), recovery=LeaderRecoveryState.RECOVERING)
    assert back.error.code is ErrorCode.invalid_request


def test_the_leaders_alter_partition_ends_the_recovery() -> None:
    """The AlterPartition a leader sends (``AlterPartitionManager``), read by the controller's
    handler: an ISR expansion of a RECOVERING partition, reported RECOVERED, is accepted."""
    h, epochs = cluster(unclean_leader_election_enable="true")
    for broker_id in (1, 2, 3):
        fence(h, epochs, broker_id)
    for broker_id in (1, 2, 3):
        unfence(h, epochs, broker_id)
    current = partition(h, 0)
    assert current.leader_recovery_state == LeaderRecoveryState.RECOVERING
    topic = h.image.topics.get_topic("t")
    assert topic is not None
    manager = AlterPartitionManager(
        node_id=1,
        broker_epoch=lambda: epochs[1],
        channel=None,  # type: ignore[arg-type]  # only its request is built here
        replica_manager=None,  # type: ignore[arg-type]
        timeout=1.0,
    )
    change = IsrChange((1, 2), current.partition_epoch, added=(2,), broker_epochs=(-1, epochs[2]))
    sent = manager._request(topic.topic_id, TopicPartition("t", 0), current.leader_epoch, change)
    reply = h.run(h.controller.alter_partition(h.image, parse_alter_partition(sent)))
    (result,) = reply.results
    assert result.error.is_success, result.error
    assert (partition(h, 0).isr, partition(h, 0).leader_recovery_state) == (
        (1, 2),
        LeaderRecoveryState.RECOVERED,
    )


def test_a_clean_election_leaves_the_recovery_state_alone() -> None:
    h, epochs = cluster()
    fence(h, epochs, 1)
    assert partition(h, 0).leader != 1
    assert partition(h, 0).leader_recovery_state == LeaderRecoveryState.RECOVERED


def test_alter_partition_from_a_stale_broker_epoch_is_refused_whole() -> None:
    h, epochs = cluster()
    reply = h.run(
        h.controller.alter_partition(h.image, AlterPartitionRequest(1, epochs[1] - 1, []))
    )
    assert reply.error.code is ErrorCode.stale_broker_epoch


def test_a_fenced_broker_cannot_join_the_isr() -> None:
    h, epochs = cluster()
    alter_isr(h, epochs, (1, 2))
    fence(h, epochs, 3)
    assert alter_isr(h, epochs, (1, 2, 3)).error.code is ErrorCode.ineligible_replica
