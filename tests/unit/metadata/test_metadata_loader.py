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
