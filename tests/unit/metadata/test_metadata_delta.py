from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Iterable

import pytest

from strom.common import TopicPartition
from strom.metadata import (
    NO_LEADER,
    BrokerEndpoint,
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    ConfigResource,
    ConfigResourceType,
    FeatureLevelRecord,
    FenceBrokerRecord,
    FencingChange,
    MetadataDelta,
    MetadataImage,
    MetadataProvenance,
    MetadataRecord,
    MetadataReplayError,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicImage,
    TopicRecord,
    TopicsImage,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
)

FOO = uuid.UUID(int=0xF00)
BAR = uuid.UUID(int=0xBA5)
TOPIC = ConfigResourceType.TOPIC


def partition(topic_id: uuid.UUID, partition_id: int, *, leader: int = 1) -> PartitionRecord:
    return PartitionRecord(
        partition_id=partition_id,
        topic_id=topic_id,
        replicas=(leader,),
        isr=(leader,),
        leader=leader,
        leader_epoch=0,
        partition_epoch=0,
    )


def replay(image: MetadataImage, records: Iterable[MetadataRecord]) -> MetadataDelta:
    delta = MetadataDelta(image)
    for record in records:
        delta.replay(record)
    return delta


def build(records: Iterable[MetadataRecord]) -> MetadataImage:
    return replay(MetadataImage.empty(), records).apply()


FOO_TOPIC: list[MetadataRecord] = [
    TopicRecord("foo", FOO),
    partition(FOO, 0),
    partition(FOO, 1, leader=2),
]


def test_created_topic_is_found_by_name_and_id() -> None:
    delta = replay(MetadataImage.empty(), FOO_TOPIC)
    assert delta.topics_delta.created_topics == {"foo": FOO}
    assert delta.topics_delta.changed_topics[FOO].new_partitions == {0, 1}
    assert delta.topics_delta.changed_topics[FOO].created
    image = delta.apply(MetadataProvenance(offset=2, epoch=1))
    topic = image.topic("foo")
    assert topic is not None
    assert image.topics.get_topic_by_id(FOO) is topic
    assert topic.num_partitions == 2
    assert image.leader(TopicPartition("foo", 1)) == 2
    assert image.leader(TopicPartition("foo", 2)) is None
    assert image.leader(TopicPartition("nope", 0)) is None
    assert image.topics.partitions("nope") == {}
    assert "foo" in image.topics
    assert len(image.topics) == 1
    assert image.highest_offset == 2


def test_partition_change_merges_and_bumps_epochs() -> None:
    image = build(FOO_TOPIC)
    delta = replay(image, [PartitionChangeRecord(partition_id=0, topic_id=FOO, isr=(1, 2))])
    changed = delta.apply()
    registration = changed.topics.get_partition(TopicPartition("foo", 0))
    assert registration is not None
    assert registration.isr == (1, 2)
    assert (registration.leader, registration.leader_epoch) == (1, 0)
    assert registration.partition_epoch == 1
    assert delta.topics_delta.changed_topics[FOO].changed_partitions == {0}
    assert not delta.topics_delta.created_topics

    moved = replay(changed, [PartitionChangeRecord(partition_id=0, topic_id=FOO, leader=2)])
    registration = moved.apply().topics.get_partition(TopicPartition("foo", 0))
    assert registration is not None
    assert (registration.leader, registration.leader_epoch, registration.partition_epoch) == (
        2,
        1,
        2,
    )
    leaderless = replay(
        changed, [PartitionChangeRecord(partition_id=0, topic_id=FOO, leader=NO_LEADER)]
    ).apply()
    registration = leaderless.topics.get_partition(TopicPartition("foo", 0))
    assert registration is not None
    assert not registration.has_leader


def test_deleted_topic_goes_with_its_configs() -> None:
    image = build([*FOO_TOPIC, ConfigRecord(TOPIC, "foo", "retention.ms", "5")])
    assert image.topic_configs("foo") == {"retention.ms": "5"}
    delta = replay(image, [RemoveTopicRecord(FOO)])
    assert delta.topics_delta.deleted_topic_ids == {FOO}
    assert delta.topics_delta.deleted_topics[FOO].name == "foo"
    assert delta.configs_delta.changed_topic_names == {"foo"}
    after = delta.apply()
    assert after.topic("foo") is None
    assert after.topic_configs("foo") == {}
    assert after.configs.resources == {}


def test_topic_created_and_deleted_in_one_delta_is_neither() -> None:
    delta = replay(
        MetadataImage.empty(),
        [*FOO_TOPIC, ConfigRecord(TOPIC, "foo", "a", "b"), RemoveTopicRecord(FOO)],
    )
    assert not delta.topics_delta.created_topics
    assert not delta.topics_delta.deleted_topic_ids
    image = delta.apply()
    assert len(image.topics) == 0
    assert image.configs.resources == {}


def test_topic_deleted_and_recreated_under_its_name_in_one_delta() -> None:
    image = build([*FOO_TOPIC, ConfigRecord(TOPIC, "foo", "retention.ms", "5")])
    delta = replay(
        image,
        [
            RemoveTopicRecord(FOO),
            TopicRecord("foo", BAR),
            ConfigRecord(TOPIC, "foo", "segment.ms", "7"),
            partition(BAR, 0),
        ],
    )
    assert delta.topics_delta.deleted_topic_ids == {FOO}
    assert delta.topics_delta.created_topics == {"foo": BAR}
    after = delta.apply()
    topic = after.topic("foo")
    assert topic is not None
    assert topic.topic_id == BAR
    assert after.topic_configs("foo") == {"segment.ms": "7"}


@pytest.mark.parametrize(
    ("records", "message"),
    [
        ([TopicRecord("foo", FOO), TopicRecord("foo", BAR)], "topic 'foo' already exists"),
        ([TopicRecord("foo", FOO), TopicRecord("bar", FOO)], "already exists"),
        ([partition(FOO, 0)], "partition record for topic id .* which does not exist"),
        (
            [TopicRecord("foo", FOO), PartitionChangeRecord(partition_id=3, topic_id=FOO)],
            "partition change for foo-3, which does not exist",
        ),
        ([RemoveTopicRecord(FOO)], "cannot remove topic id"),
        ([TopicRecord("foo", FOO), RemoveTopicRecord(FOO), partition(FOO, 0)], "does not exist"),
        ([ConfigRecord(99, "x", "a", "b")], "unknown resource type 99"),
        (
            [ProducerIdsRecord(1, 1, 2000), ProducerIdsRecord(1, 1, 1000)],
            "ids would be handed out twice",
        ),
        ([FenceBrokerRecord(id=1, epoch=0)], "fencing of broker 1, which is not registered"),
    ],
)
def test_contradicting_records_are_refused(records: list[MetadataRecord], message: str) -> None:
    with pytest.raises(MetadataReplayError, match=message):
        replay(MetadataImage.empty(), records)


def test_config_records_set_and_delete() -> None:
    broker = ConfigResource.broker(1)
    image = build(
        [
            ConfigRecord(ConfigResourceType.BROKER, "1", "num.io.threads", "4"),
            ConfigRecord(ConfigResourceType.BROKER, "", "message.max.bytes", "100"),
            ConfigRecord(ConfigResourceType.BROKER, "1", "log.retention.hours", "1"),
        ]
    )
    assert image.configs.configs(broker) == {"num.io.threads": "4", "log.retention.hours": "1"}
    assert image.configs.broker_configs() == {"message.max.bytes": "100"}
    delta = replay(
        image,
        [
            ConfigRecord(ConfigResourceType.BROKER, "1", "num.io.threads", None),
            ConfigRecord(ConfigResourceType.BROKER, "", "message.max.bytes", None),
        ],
    )
    assert delta.configs_delta.changed_configs[broker].changes == {"num.io.threads": None}
    after = delta.apply()
    assert after.configs.broker_configs(1) == {"log.retention.hours": "1"}
    assert ConfigResource.broker() not in after.configs.resources


def register(broker_id: int, epoch: int, *, fenced: bool = True) -> RegisterBrokerRecord:
    return RegisterBrokerRecord(
        broker_id=broker_id,
        incarnation_id=uuid.UUID(int=broker_id),
        broker_epoch=epoch,
        endpoints=(BrokerEndpoint("PLAINTEXT", "localhost", 9092),),
        fenced=fenced,
    )


def test_brokers_register_fence_and_leave() -> None:
    image = build([register(1, 10), register(2, 11, fenced=False)])
    assert image.cluster.active_broker_ids() == (2,)
    b1 = image.cluster.broker(1)
    assert b1 is not None
    assert b1.endpoint("PLAINTEXT") == BrokerEndpoint("PLAINTEXT", "localhost", 9092)
    assert b1.endpoint("SSL") is None
    image = build(
        [
            *image.records(),
            BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=10, fenced=-1),
            BrokerRegistrationChangeRecord(broker_id=2, broker_epoch=11, in_controlled_shutdown=1),
        ]
    )
    assert image.cluster.active_broker_ids() == (1,)
    delta = replay(
        image,
        [
            FenceBrokerRecord(id=1, epoch=10),
            UnfenceBrokerRecord(id=1, epoch=10),
            UnregisterBrokerRecord(broker_id=2, broker_epoch=11),
        ],
    )
    assert set(delta.cluster_delta.changed_brokers) == {1, 2}
    after = delta.apply()
    assert after.cluster.active_broker_ids() == (1,)
    assert after.cluster.broker(2) is None


@pytest.mark.parametrize(
    "record",
    [
        BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=9, fenced=FencingChange.FENCE),
        UnfenceBrokerRecord(id=1, epoch=11),
        BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=10, fenced=7),
    ],
)
def test_broker_changes_at_another_epoch_are_refused(record: MetadataRecord) -> None:
    with pytest.raises(MetadataReplayError):
        replay(build([register(1, 10)]), [record])


def test_feature_levels_and_their_removal() -> None:
    image = build([FeatureLevelRecord("metadata.version", 14), FeatureLevelRecord("x", 1)])
    assert image.features.metadata_version == 14
    delta = replay(image, [FeatureLevelRecord("x", 0)])
    assert delta.features_delta.changes == {"x": None}
    assert delta.apply().features.finalized_levels == {"metadata.version": 14}
    assert MetadataImage.empty().features.metadata_version is None


def test_producer_ids_only_grow() -> None:
    image = build([ProducerIdsRecord(broker_id=1, broker_epoch=3, next_producer_id=1000)])
    assert image.producer_ids.next_producer_id == 1000
    delta = replay(image, [ProducerIdsRecord(broker_id=1, broker_epoch=3, next_producer_id=2000)])
    assert delta.producer_ids_delta.next_producer_id == 2000
    with pytest.raises(MetadataReplayError):
        replay(image, [ProducerIdsRecord(broker_id=1, broker_epoch=3, next_producer_id=1000)])


def test_untouched_sub_images_are_shared() -> None:
    image = build([*FOO_TOPIC, register(1, 0)])
    after = replay(image, [ConfigRecord(TOPIC, "foo", "a", "b"), NoOpRecord()]).apply()
    assert after.topics is image.topics
    assert after.cluster is image.cluster
    assert after.features is image.features
    assert after.configs is not image.configs
    assert not replay(image, [NoOpRecord()]).has_changes


def test_images_cannot_be_changed() -> None:
    image = build(FOO_TOPIC)
    topic = image.topic("foo")
    assert topic is not None
    with pytest.raises(TypeError):
        topic.partitions[5] = topic.partitions[0]  # type: ignore[index]
    with pytest.raises(TypeError):
        image.topics.topics_by_name["x"] = topic  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        image.topics = TopicsImage()  # type: ignore[misc]


def test_an_image_refuses_two_topics_with_one_name() -> None:
    with pytest.raises(ValueError, match="share a name"):
        TopicsImage(
            {
                FOO: TopicImage("foo", FOO, {}),
                BAR: TopicImage("foo", BAR, {}),
            }
        )


def test_image_records_rebuild_the_image() -> None:
    image = build(
        [
            FeatureLevelRecord("z.feature", 2),
            FeatureLevelRecord("metadata.version", 14),
            register(1, 0, fenced=False),
            *FOO_TOPIC,
            TopicRecord("bar", BAR),
            partition(BAR, 0),
            ConfigRecord(TOPIC, "foo", "retention.ms", "5"),
            ConfigRecord(ConfigResourceType.BROKER, "", "num.io.threads", "3"),
            ProducerIdsRecord(broker_id=1, broker_epoch=0, next_producer_id=1000),
            PartitionChangeRecord(partition_id=0, topic_id=FOO, leader=NO_LEADER, isr=()),
        ]
    )
    records = list(image.records())
    assert records[0] == FeatureLevelRecord("metadata.version", 14)
    assert build(records) == image
    assert not image.is_empty
    assert MetadataImage.empty().is_empty
    assert dataclasses.replace(MetadataImage.empty(), provenance=MetadataProvenance(5)).is_empty


def test_replicas_on_a_broker() -> None:
    image = build(FOO_TOPIC)
    on_two = [(topic.name, p) for topic, p, _ in image.topics.replicas_on(2)]
    assert on_two == [("foo", 1)]
