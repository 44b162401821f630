"""The cluster metadata log of a single voter: partition ``__cluster_metadata-0`` in the data dir.

It is what the metadata package's ``MetadataLogReader``/``MetadataLogWriter`` ask for:

* **append**: the records of one controller result become one v2 record batch (built with
  :func:`strom.protocol.records.build_batch`; each record's value is the ``encode_record``
  frame, its key null), appended to the partition and fsynced before ``append`` returns. A
  quorum of one voter commits on its own durable write, so a returned batch is committed.
* **read_batches**: the batches from an offset on, decoded back into encoded records.

The batch's partition leader epoch is the quorum epoch. Each start of the node is a new
election of the single voter: the epoch is one above the last batch's (1 for an empty log),
as a Raft leader's would be.

The partition lives beside the topic partitions and is loaded, checkpointed and closed by the
``LogManager`` like them; it is never offered to clients, never shown by DescribeLogDirs and
never touched by retention (a snapshot mechanism will trim it later, as in Kafka).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Final

from strom.common import Clock, TopicPartition
from strom.controller import CLUSTER_METADATA_TOPIC
from strom.metadata import EncodedBatch
from strom.protocol.batch import HEADER_SIZE, BatchHeader
from strom.protocol.records import Record, build_batch, iter_records
from strom.storage.log_config import LogConfig
from strom.storage.partition_log import PartitionLog

__all__ = [
    "METADATA_LOG_CONFIG",
    "METADATA_PARTITION",
    "MetadataLogCorruptError",
    "PartitionMetadataLog",
]

METADATA_PARTITION: Final = TopicPartition(CLUSTER_METADATA_TOPIC, 0)

METADATA_LOG_CONFIG: Final = LogConfig(
    max_message_bytes=8 * 1024 * 1024,  # Kafka's KafkaRaftClient.MAX_BATCH_SIZE_BYTES
    retention_ms=-1,
    retention_bytes=-1,
)
"""Kafka's ``metadata.log.*`` defaults: 1 GiB segments, rolled weekly, kept until snapshots
make them unnecessary (no time or size retention)."""

_READ_CHUNK: Final = 1024 * 1024


class MetadataLogCorruptError(Exception):
    """The metadata log holds something that is not a batch of metadata records."""


class PartitionMetadataLog:
    """The metadata log reader and writer over one :class:`PartitionLog`."""

    def __init__(self, log: PartitionLog, *, clock: Clock) -> None:
        self._log = log
        self._clock = clock
        self._epoch = self._last_epoch() + 1

    @property
    def epoch(self) -> int:
        """The quorum epoch this process writes in."""
        return self._epoch

    @property
    def end_offset(self) -> int:
        """The offset the next record gets (everything below it is committed)."""
        return self._log.log_end_offset

    def append(self, records: Sequence[bytes]) -> EncodedBatch:
        """Append the records as one batch and fsync it; the returned batch is committed."""
        if not records:
            raise ValueError("nothing to append")
        base = self._log.log_end_offset
        now = self._clock.now_ms()
        batch = build_batch(
            [
                Record(offset=base + i, timestamp=now, key=None, value=value)
                for i, value in enumerate(records)
            ],
            partition_leader_epoch=self._epoch,
        )
        info = self._log.append(batch, leader_epoch=self._epoch)
        self._log.flush()
        return EncodedBatch(base_offset=info.base_offset, records=tuple(records), epoch=self._epoch)

    def read_batches(self, start_offset: int) -> Iterator[EncodedBatch]:
        """Every batch holding a record at ``start_offset`` or later, oldest first."""
        offset = max(start_offset, self._log.log_start_offset)
        while offset < self._log.log_end_offset:
            data = self._log.read_bytes(offset, max_bytes=_READ_CHUNK)
            if not data:
                break
            for batch in _batches(data):
                yield batch
                offset = batch.base_offset + len(batch.records)

    def _last_epoch(self) -> int:
        """The partition leader epoch of the last batch; 0 for an empty log."""
        segments = self._log.segments
        for segment in reversed(segments):
            last: BatchHeader | None = None
            for _, header in segment.batches(0):
                last = header
            if last is not None:
                return max(last.partition_leader_epoch, 0)
        return 0


def _batches(data: bytes) -> Iterator[EncodedBatch]:
    position = 0
    while position + HEADER_SIZE <= len(data):
        header = BatchHeader.read(data, position)
        chunk = data[position : position + header.size]
        position += header.size
        if header.is_control:
            continue
        try:
            records = list(iter_records(chunk))
        except Exception as error:
            raise MetadataLogCorruptError(
                f"metadata batch at offset {header.base_offset} cannot be read: {error}"
            ) from error
        values: list[bytes] = []
        for index, record in enumerate(records):
            if record.offset != header.base_offset + index or record.value is None:
                raise MetadataLogCorruptError(
                    f"metadata batch at offset {header.base_offset} has a gap or a null record"
                )
            values.append(record.value)
        if values:
            yield EncodedBatch(
                base_offset=header.base_offset,
                records=tuple(values),
                epoch=header.partition_leader_epoch,
            )
