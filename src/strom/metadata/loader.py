"""The metadata loader: batches of records from the metadata log become images for publishers.

The metadata log itself is handed in. Today the server keeps it in the ``__cluster_metadata-0``
partition log; later it is the Raft log. Either way it only has to do what
:class:`MetadataLogReader` and :class:`MetadataLogWriter` say: append encoded records atomically
and durably, returning their offsets, and read them back from an offset.

The loader keeps the current image, replays batches into a :class:`MetadataDelta`, applies it and
calls every publisher with ``(delta, new_image)``, in the order they were installed. A publisher
installed late first gets the whole current image as one delta from the empty image, so it never
needs a separate start-up path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from strom.metadata.delta import MetadataDelta
from strom.metadata.image import MetadataImage, MetadataProvenance
from strom.metadata.records import (
    ConfigRecord,
    MetadataRecord,
    ProducerIdsRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnregisterBrokerRecord,
    decode_record,
    encode_record,
)

__all__ = [
    "EncodedBatch",
    "InMemoryMetadataLog",
    "MetadataBatch",
    "MetadataLoader",
    "MetadataLogReader",
    "MetadataLogWriter",
    "MetadataPublisher",
    "append_records",
]


@dataclass(frozen=True, slots=True)
class MetadataBatch:
    """Records at consecutive offsets from ``base_offset``, written in one leader ``epoch``."""

    base_offset: int
    records: Sequence[MetadataRecord]
    epoch: int = 0

    @property
    def last_offset(self) -> int:
        return self.base_offset + len(self.records) - 1

    def __iter__(self) -> Iterator[tuple[int, MetadataRecord]]:
        return ((self.base_offset + i, record) for i, record in enumerate(self.records))


@dataclass(frozen=True, slots=True)
class EncodedBatch:
    """A batch as the log stores it: encoded records from ``base_offset``."""

    base_offset: int
    records: Sequence[bytes]
    epoch: int = 0

    def decode(self) -> MetadataBatch:
        return MetadataBatch(
            base_offset=self.base_offset,
            records=tuple(decode_record(data) for data in self.records),
            epoch=self.epoch,
        )


class MetadataLogReader(Protocol):
    def read_batches(self, start_offset: int) -> Iterable[EncodedBatch]:
        """Batches holding every record at ``start_offset`` or later, oldest first; the first
        batch may start before ``start_offset``."""
        ...


class MetadataLogWriter(Protocol):
    def append(self, records: Sequence[bytes]) -> EncodedBatch:
        """Append the records atomically (all or none) and durably; the returned batch says
        where they landed."""
        ...


MetadataPublisher = Callable[[MetadataDelta, MetadataImage], None]
"""Called with what changed and the image it led to; it must not keep the delta."""


def append_records(log: MetadataLogWriter, records: Sequence[MetadataRecord]) -> MetadataBatch:
    """Encode and append records (one atomic batch); returns them with their offsets."""
    if not records:
        raise ValueError("nothing to append")
    stored = log.append([encode_record(record) for record in records])
    return MetadataBatch(base_offset=stored.base_offset, records=tuple(records), epoch=stored.epoch)


class MetadataLoader:
    """Holds the current image and publishes every change to it."""

    def __init__(self, image: MetadataImage | None = None) -> None:
        self._image = MetadataImage.empty() if image is None else image
        self._publishers: list[MetadataPublisher] = []

    @property
    def image(self) -> MetadataImage:
        return self._image

    def install_publisher(self, publisher: MetadataPublisher) -> None:
        """Add a publisher; it is told about the current image at once, as one big change."""
        self._publishers.append(publisher)
        if not self._image.is_empty:
            delta = MetadataDelta(MetadataImage.empty())
            for record in self._image.records():
                delta.replay(record)
            publisher(delta, self._image)

    def remove_publisher(self, publisher: MetadataPublisher) -> None:
        self._publishers.remove(publisher)

    def apply_batch(self, batch: MetadataBatch) -> MetadataImage:
        return self.apply_batches([batch])

    def apply_batches(self, batches: Iterable[MetadataBatch]) -> MetadataImage:
        """Replay the batches into one delta and publish it once.

        Records at or below the image's offset are skipped, so handing the loader a batch twice
        is harmless; gaps between offsets are fine (the log may hold control records). If a
        record cannot be replayed, nothing of these batches is applied.
        """
        delta = MetadataDelta(self._image)
        provenance = self._image.provenance
        for batch in batches:
            for offset, record in batch:
                if offset <= provenance.offset:
                    continue
                delta.replay(record)
                provenance = MetadataProvenance(offset=offset, epoch=batch.epoch)
        if provenance == self._image.provenance:
            return self._image
        self._image = delta.apply(provenance)
        self._publish(delta)
        return self._image

    def load_snapshot(self, records: Iterable[bytes], *, offset: int, epoch: int) -> MetadataImage:
        """Replace the image with a snapshot's (its records, up to but excluding ``offset``) and
        publish the difference from the current image as one delta."""
        snapshot = MetadataDelta(MetadataImage.empty())
        for data in records:
            snapshot.replay(decode_record(data))
        target = snapshot.apply(MetadataProvenance(offset=offset - 1, epoch=epoch))
        delta = _difference(self._image, target)
        self._image = delta.apply(target.provenance)
        self._publish(delta)
        return self._image

    def catch_up(self, log: MetadataLogReader) -> MetadataImage:
        """Apply everything the log holds after the current image's offset."""
        start = self._image.highest_offset + 1
        return self.apply_batches(batch.decode() for batch in log.read_batches(start))

    def _publish(self, delta: MetadataDelta) -> None:
        errors: list[Exception] = []
        for publisher in list(self._publishers):
            try:
                publisher(delta, self._image)
            except Exception as error:  # every publisher hears about every image
                errors.append(error)
        if errors:
            raise ExceptionGroup(
                f"{len(errors)} metadata publisher(s) failed at offset "
                f"{self._image.highest_offset}",
                errors,
            )


def _difference(old: MetadataImage, new: MetadataImage) -> MetadataDelta:
    """A delta from ``old`` that leads to ``new``: what ``old`` has and ``new`` lacks is removed,
    then every record of ``new`` is replayed (they set values), but for topics both have."""
    delta = MetadataDelta(old)
    for topic_id in old.topics.topics_by_id.keys() - new.topics.topics_by_id.keys():
        delta.replay(RemoveTopicRecord(topic_id=topic_id))
    for broker_id in old.cluster.brokers.keys() - new.cluster.brokers.keys():
        old_broker = old.cluster.brokers[broker_id]
        delta.replay(UnregisterBrokerRecord(broker_id=broker_id, broker_epoch=old_broker.epoch))
    for resource, configs in old.configs.resources.items():
        kept = new.configs.resources.get(resource, {})
        for name in configs.keys() - kept.keys():
            delta.replay(ConfigRecord(resource.type, resource.name, name, None))
    for record in new.records():
        if isinstance(record, TopicRecord) and record.topic_id in old.topics.topics_by_id:
            continue
        if (
            isinstance(record, ProducerIdsRecord)
            and record.next_producer_id <= old.producer_ids.next_producer_id
        ):
            continue
        delta.replay(record)
    return delta


@dataclass
class InMemoryMetadataLog:
    """A metadata log in a list; for tests and tools (nothing survives the process)."""

    batches: list[EncodedBatch] = field(default_factory=list)
    epoch: int = 0

    @property
    def next_offset(self) -> int:
        if not self.batches:
            return 0
        last = self.batches[-1]
        return last.base_offset + len(last.records)

    def append(self, records: Sequence[bytes]) -> EncodedBatch:
        batch = EncodedBatch(base_offset=self.next_offset, records=tuple(records), epoch=self.epoch)
        self.batches.append(batch)
        return batch

    def read_batches(self, start_offset: int) -> Iterator[EncodedBatch]:
        for batch in self.batches:
            if batch.base_offset + len(batch.records) > start_offset:
                yield batch
