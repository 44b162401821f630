from __future__ import annotations

import uuid

import pytest

from strom.metadata import (
    ConfigRecord,
    ConfigResourceType,
    EncodedBatch,
    FeatureLevelRecord,
    InMemoryMetadataLog,
    MetadataBatch,
    MetadataDelta,
    MetadataImage,
    MetadataLoader,
    MetadataProvenance,
    MetadataRecord,
    MetadataReplayError,
    NoOpRecord,
    PartitionRecord,
    RemoveTopicRecord,
    TopicRecord,
    append_records,
    encode_record,
)

FOO = uuid.UUID(int=0xF00)


def foo_records() -> list[TopicRecord | PartitionRecord]:
    return [
        TopicRecord("foo", FOO),
        PartitionRecord(
            partition_id=0,
            topic_id=FOO,
            replicas=(1,),
            isr=(1,),
            leader=1,
            leader_epoch=0,
            partition_epoch=0,
        ),
    ]


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[MetadataDelta, MetadataImage]] = []

    def __call__(self, delta: MetadataDelta, image: MetadataImage) -> None:
        self.calls.append((delta, image))


def test_a_batch_is_applied_and_published() -> None:
    loader = MetadataLoader()
    seen = Recorder()
    loader.install_publisher(seen)
    assert seen.calls == []  # nothing to tell about an empty image
    image = loader.apply_batch(MetadataBatch(base_offset=0, records=foo_records(), epoch=3))
    assert image is loader.image
    assert image.provenance == MetadataProvenance(offset=1, epoch=3)
    [(delta, published)] = seen.calls
    assert published is image
    assert delta.topics_delta.created_topics == {"foo": FOO}


def test_records_already_applied_are_skipped() -> None:
    loader = MetadataLoader()
    seen = Recorder()
    loader.install_publisher(seen)
    batch = MetadataBatch(base_offset=0, records=foo_records())
    first = loader.apply_batch(batch)
    assert loader.apply_batch(batch) is first
    assert len(seen.calls) == 1
    overlapping = MetadataBatch(base_offset=1, records=[*foo_records()[1:], NoOpRecord()])
    assert loader.apply_batch(overlapping).highest_offset == 2
    assert len(seen.calls) == 2


def test_gaps_between_offsets_are_fine() -> None:
    loader = MetadataLoader()
    loader.apply_batches(
        [
            MetadataBatch(base_offset=0, records=foo_records()),
            MetadataBatch(base_offset=10, records=[RemoveTopicRecord(FOO)]),
        ]
    )
    assert loader.image.highest_offset == 10
    assert loader.image.topic("foo") is None


def test_several_batches_make_one_publication() -> None:
    loader = MetadataLoader()
    seen = Recorder()
    loader.install_publisher(seen)
    loader.apply_batches(
        [
            MetadataBatch(base_offset=0, records=foo_records()),
            MetadataBatch(base_offset=2, records=[RemoveTopicRecord(FOO)]),
        ]
    )
    [(delta, _)] = seen.calls
    assert not delta.topics_delta.created_topics
    assert not delta.topics_delta.deleted_topic_ids


def test_a_late_publisher_gets_the_whole_image_at_once() -> None:
    loader = MetadataLoader()
    loader.apply_batch(
        MetadataBatch(
            base_offset=0,
            records=[
                FeatureLevelRecord("metadata.version", 14),
                *foo_records(),
                ConfigRecord(ConfigResourceType.TOPIC, "foo", "retention.ms", "9"),
            ],
        )
    )
    seen = Recorder()
    loader.install_publisher(seen)
    [(delta, image)] = seen.calls
    assert image is loader.image
    assert delta.topics_delta.created_topics == {"foo": FOO}
    assert delta.configs_delta.changed_topic_names == {"foo"}
    assert delta.apply(image.provenance) == image
    loader.remove_publisher(seen)
    loader.apply_batch(MetadataBatch(base_offset=4, records=[NoOpRecord()]))
    assert len(seen.calls) == 1


def test_every_publisher_hears_even_when_one_fails() -> None:
    loader = MetadataLoader()

    def broken(delta: MetadataDelta, image: MetadataImage) -> None:
        raise RuntimeError("disk full")

    seen = Recorder()
    loader.install_publisher(broken)
    loader.install_publisher(seen)
    with pytest.raises(ExceptionGroup) as caught:
        loader.apply_batch(MetadataBatch(base_offset=0, records=foo_records()))
    assert "1 metadata publisher(s) failed at offset 1" in str(caught.value)
    assert len(seen.calls) == 1
    assert loader.image.topic("foo") is not None


def test_a_record_that_cannot_apply_leaves_the_image_as_it_was() -> None:
    loader = MetadataLoader()
    before = loader.apply_batch(MetadataBatch(base_offset=0, records=foo_records()))
    with pytest.raises(MetadataReplayError):
        loader.apply_batch(
            MetadataBatch(base_offset=2, records=[NoOpRecord(), TopicRecord("foo", uuid.uuid4())])
        )
    assert loader.image is before


def test_catch_up_reads_the_log_from_after_the_image() -> None:
    log = InMemoryMetadataLog(epoch=2)
    first = append_records(log, foo_records())
    assert (first.base_offset, first.last_offset, first.epoch) == (0, 1, 2)
    second = append_records(log, [RemoveTopicRecord(FOO)])
    assert second.base_offset == 2
    assert [b.base_offset for b in log.read_batches(1)] == [0, 2]
    assert [b.base_offset for b in log.read_batches(2)] == [2]

    loader = MetadataLoader()
    loader.apply_batch(first)
    seen = Recorder()
    loader.install_publisher(seen)
    image = loader.catch_up(log)
    assert image.highest_offset == 2
    _, (delta, _) = seen.calls  # the first call introduced the image at install time
    assert delta.topics_delta.deleted_topic_ids == {FOO}
    assert loader.catch_up(log) is image

    fresh = MetadataLoader()
    assert fresh.catch_up(log) == image


def test_encoded_batches_decode() -> None:
    batch = EncodedBatch(base_offset=5, records=[encode_record(NoOpRecord())], epoch=1)
    assert batch.decode() == MetadataBatch(base_offset=5, records=(NoOpRecord(),), epoch=1)
    assert list(batch.decode()) == [(5, NoOpRecord())]


def test_nothing_to_append_is_an_error() -> None:
    with pytest.raises(ValueError, match="nothing to append"):
        append_records(InMemoryMetadataLog(), [])


def test_a_snapshot_replaces_the_image_and_publishes_the_difference() -> None:
    foo, bar, baz = uuid.UUID(int=1), uuid.UUID(int=2), uuid.UUID(int=3)

    def topic(name: str, topic_id: uuid.UUID, leader: int) -> list[MetadataRecord]:
        return [
            TopicRecord(name=name, topic_id=topic_id),
            PartitionRecord(
                partition_id=0,
                topic_id=topic_id,
                replicas=(1,),
                isr=(1,),
                leader=leader,
                leader_epoch=0,
                partition_epoch=0,
            ),
        ]

    old_records: list[MetadataRecord] = [
        *topic("foo", foo, 1),
        *topic("bar", bar, 1),
        ConfigRecord(ConfigResourceType.TOPIC, "foo", "retention.ms", "1"),
        ConfigRecord(ConfigResourceType.TOPIC, "foo", "segment.ms", "2"),
    ]
    new_records: list[MetadataRecord] = [
        *topic("foo", foo, -1),
        *topic("baz", baz, 1),
        ConfigRecord(ConfigResourceType.TOPIC, "foo", "retention.ms", "5"),
    ]
    loader = MetadataLoader()
    loader.apply_batch(MetadataBatch(base_offset=0, records=old_records))
    deltas: list[MetadataDelta] = []
    loader.install_publisher(lambda delta, image: deltas.append(delta))
    deltas.clear()
    image = loader.load_snapshot(
        [encode_record(record) for record in new_records], offset=40, epoch=3
    )
    expected = MetadataLoader()
    expected.apply_batch(MetadataBatch(base_offset=0, records=new_records))
    assert list(image.records()) == list(expected.image.records())
    assert image.provenance == MetadataProvenance(offset=39, epoch=3)
    [delta] = deltas
    assert set(delta.topics_delta.deleted_topics) == {bar}
    assert set(delta.topics_delta.created_topics) == {"baz"}
    assert image.topic("foo").partitions[0].leader == -1  # type: ignore[union-attr]
