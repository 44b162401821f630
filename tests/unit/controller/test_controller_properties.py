"""Random sequences of controller operations, their records replayed, keep the image consistent.

A small model (topic name -> partition count) predicts CreateTopics', DeleteTopics' and
CreatePartitions' answers; after every step the image must agree with the model and with
itself (contiguous partitions, unique names and ids, no colliding names, sane replicas, leaders
only on active brokers in the ISR, none only when no ISR member is active), and
replaying the whole metadata log from scratch must give the same image.
"""

from __future__ import annotations

import dataclasses

from controller_harness import Harness
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from strom.common import ErrorCode
from strom.controller import (
    AlterableConfig,
    AlterConfigOp,
    AlterConfigsRequest,
    AlterConfigsResource,
    ConfigEntry,
    CreatableTopic,
    CreatePartitionsRequest,
    CreatePartitionsTopic,
    CreateTopicsRequest,
    DeletableTopic,
    DeleteTopicsRequest,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResource,
)
from strom.controller.topic_names import CollisionIndex, invalid_topic_reason
from strom.metadata import (
    NO_LEADER,
    ConfigResourceType,
    MetadataBatch,
    MetadataImage,
    MetadataLoader,
)

NAMES = st.sampled_from(
    ["a.b", "a_b", "c", "d-e", "x", "x.y", "x_y", "__consumer_offsets", "", "bad name", ".."]
)
CONFIG_NAMES = st.sampled_from(["retention.ms", "segment.ms", "cleanup.policy", "nope"])
CONFIG_VALUES = st.sampled_from(["100", "compact", "delete", "-5", "x"])
BROKERS = (1, 2, 3)


def check_image(image: MetadataImage) -> None:
    topics = image.topics
    assert len(topics.topics_by_id) == len(topics.topics_by_name)
    collisions = CollisionIndex()
    for topic_id, topic in topics.topics_by_id.items():
        assert topic.topic_id == topic_id
        assert topics.topics_by_name[topic.name] is topic
        assert invalid_topic_reason(topic.name) is None
        assert collisions.collision(topic.name) is None
        collisions.add(topic.name)
        assert sorted(topic.partitions) == list(range(len(topic.partitions)))
        assert topic.partitions, "a topic has at least one partition"
        sizes = {len(p.replicas) for p in topic.partitions.values()}
        assert len(sizes) == 1
        for registration in topic.partitions.values():
            assert len(set(registration.replicas)) == len(registration.replicas)
            assert set(registration.replicas) <= set(image.cluster.brokers)
            isr, elr = set(registration.isr), set(registration.eligible_leader_replicas)
            assert isr <= set(registration.replicas)
            assert elr <= set(registration.replicas)
            assert not isr & elr, "a replica is in the ISR or the ELR, not both"
            if len(isr) >= 1:  # the topics here keep the default min.insync.replicas, 1
                assert not elr and not registration.last_known_elr
            else:  # an emptied ISR remembers who may lead: the ELR or the last leader
                assert elr or registration.last_known_elr
            active = set(image.cluster.active_broker_ids())
            if registration.leader == NO_LEADER:  # every replica that may lead is away
                assert not active & (isr or elr)
            else:
                assert registration.leader in isr
                assert registration.leader in active
    for resource in image.configs.resources:
        if resource.type is ConfigResourceType.TOPIC:
            assert resource.name in topics.topics_by_name


class ControllerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.h = Harness(seed=7)
        self.epochs = {broker_id: self.h.add_broker(broker_id) for broker_id in BROKERS}
        self.fenced: set[int] = set()
        self.model: dict[str, int] = {}
        self.next_producer_id = 0

    # What the model predicts ---------------------------------------------------------------

    def expected_create(
        self, name: str, partitions: int, rf: int, *, bad_config: bool = False
    ) -> ErrorCode:
        if invalid_topic_reason(name) is not None:
            return ErrorCode.invalid_topic_exception
        if name in self.model:
            return ErrorCode.topic_already_exists
        if CollisionIndex(self.model).collision(name) is not None:
            return ErrorCode.invalid_topic_exception
        if bad_config:
            return ErrorCode.invalid_config
        if rf == 0:
            return ErrorCode.invalid_replication_factor
        if partitions == 0:
            return ErrorCode.invalid_partitions
        wanted = 1 if rf == -1 else rf
        if wanted > len(BROKERS) or len(self.fenced) == len(BROKERS):
            return ErrorCode.invalid_replication_factor
        return ErrorCode.none

    # Rules -----------------------------------------------------------------------------------

    @rule(
        name=NAMES,
        partitions=st.sampled_from([-1, 0, 1, 2, 4]),
        rf=st.sampled_from([-1, 0, 1, 2, 3, 4]),
        retention=st.sampled_from([None, "100", "soon"]),
        validate_only=st.booleans(),
    )
    def create_topic(
        self, name: str, partitions: int, rf: int, retention: str | None, validate_only: bool
    ) -> None:
        configs = {} if retention is None else {"retention.ms": retention}
        expected = self.expected_create(name, partitions, rf, bad_config=retention == "soon")
        before = self.h.image
        [result] = self.h.run(
            self.h.controller.create_topics(
                before,
                CreateTopicsRequest(
                    [CreatableTopic(name, partitions, rf, configs=configs)],
                    validate_only=validate_only,
                ),
            )
        )
        assert result.error.code is expected, result.error
        event(f"create_topic: {expected.name}")
        if expected is ErrorCode.none and not validate_only:
            self.model[name] = 1 if partitions == -1 else partitions
            assert self.h.image.topic_configs(name) == configs
        else:
            assert self.h.image is before

    @rule(names=st.lists(NAMES, min_size=1, max_size=3))
    def create_topics_together(self, names: list[str]) -> None:
        results = self.h.run(
            self.h.controller.create_topics(
                self.h.image, CreateTopicsRequest([CreatableTopic(n) for n in names])
            )
        )
        assert [r.name for r in results] == list(dict.fromkeys(names))
        for result in results:
            if result.error.is_success:
                self.model[result.name] = 1

    @rule(name=NAMES, by_id=st.booleans())
    def delete_topic(self, name: str, by_id: bool) -> None:
        topic = self.h.image.topic(name)
        entry = (
            DeletableTopic(topic_id=topic.topic_id)
            if by_id and topic
            else DeletableTopic(name=name)
        )
        [result] = self.h.run(
            self.h.controller.delete_topics(self.h.image, DeleteTopicsRequest([entry]))
        )
        event(f"delete_topic: {result.error.code.name}")
        if name in self.model:
            assert result.error.is_success
            del self.model[name]
        else:
            assert result.error.code is ErrorCode.unknown_topic_or_partition

    @rule(name=NAMES, count=st.integers(0, 6))
    def create_partitions(self, name: str, count: int) -> None:
        [result] = self.h.run(
            self.h.controller.create_partitions(
                self.h.image, CreatePartitionsRequest([CreatePartitionsTopic(name, count)])
            )
        )
        event(f"create_partitions: {result.error.code.name}")
        if name not in self.model:
            assert result.error.code is ErrorCode.unknown_topic_or_partition
        elif count <= self.model[name]:
            assert result.error.code is ErrorCode.invalid_partitions
        elif result.error.is_success:
            self.model[name] = count
        else:  # the topic's replication factor no longer fits the unfenced brokers
            assert result.error.code is ErrorCode.invalid_replication_factor

    @rule(
        name=NAMES,
        config=CONFIG_NAMES,
        value=CONFIG_VALUES,
        op=st.sampled_from(list(AlterConfigOp)),
    )
    def incremental_alter(self, name: str, config: str, value: str, op: AlterConfigOp) -> None:
        before = self.h.image
        [result] = self.h.run(
            self.h.controller.incremental_alter_configs(
                before,
                IncrementalAlterConfigsRequest(
                    [
                        IncrementalAlterConfigsResource(
                            ConfigResourceType.TOPIC, name, [AlterableConfig(config, value, op)]
                        )
                    ]
                ),
            )
        )
        if name not in self.model:
            assert result.error.is_failure
        if result.error.is_failure:
            assert self.h.image is before
        elif op is AlterConfigOp.SET:
            assert self.h.image.topic_configs(name)[config] == value
        elif op is AlterConfigOp.DELETE:
            assert config not in self.h.image.topic_configs(name)

    @rule(name=NAMES, configs=st.dictionaries(CONFIG_NAMES, CONFIG_VALUES, max_size=2))
    def alter(self, name: str, configs: dict[str, str]) -> None:
        [result] = self.h.run(
            self.h.controller.alter_configs(
                self.h.image,
                AlterConfigsRequest(
                    [
                        AlterConfigsResource(
                            ConfigResourceType.TOPIC,
                            name,
                            [ConfigEntry(k, v) for k, v in configs.items()],
                        )
                    ]
                ),
            )
        )
        if result.error.is_success:
            assert self.h.image.topic_configs(name) == configs

    @rule(broker_id=st.sampled_from(BROKERS))
    def toggle_fencing(self, broker_id: int) -> None:
        epoch = self.epochs[broker_id]
        if broker_id in self.fenced:
            self.h.run(
                self.h.controller.unfence_broker(
                    self.h.image, broker_id=broker_id, broker_epoch=epoch
                )
            )
            self.fenced.discard(broker_id)
        else:
            self.h.run(
                self.h.controller.fence_broker(
                    self.h.image, broker_id=broker_id, broker_epoch=epoch
                )
            )
            self.fenced.add(broker_id)

    @precondition(lambda self: 1 not in self.fenced)
    @rule()
    def allocate_producer_ids(self) -> None:
        block = self.h.run(
            self.h.controller.allocate_producer_ids(
                self.h.image, broker_id=1, broker_epoch=self.epochs[1]
            )
        )
        assert block.first_producer_id == self.next_producer_id
        self.next_producer_id = block.first_producer_id + block.size

    # Invariants ------------------------------------------------------------------------------

    @invariant()
    def image_is_consistent(self) -> None:
        check_image(self.h.image)

    @invariant()
    def image_matches_the_model(self) -> None:
        image = self.h.image
        assert {n: t.num_partitions for n, t in image.topics.topics_by_name.items()} == self.model
        assert image.producer_ids.next_producer_id == self.next_producer_id
        assert set(image.cluster.active_broker_ids()) == set(BROKERS) - self.fenced

    @invariant()
    def the_log_rebuilds_the_image(self) -> None:
        fresh = MetadataLoader()
        assert fresh.catch_up(self.h.log) == self.h.image
        snapshot = MetadataBatch(base_offset=0, records=list(self.h.image.records()))
        rebuilt = MetadataLoader().apply_batch(snapshot)
        assert dataclasses.replace(rebuilt, provenance=self.h.image.provenance) == self.h.image


TestControllerMachine = ControllerMachine.TestCase
TestControllerMachine.settings = settings(
    max_examples=60,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
