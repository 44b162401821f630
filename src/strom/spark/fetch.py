"""Reading one offset range of one partition, on an executor, and reporting data loss.

A Spark task reads ``[start, end)`` of a partition with its own confluent-kafka Consumer:
``assign()`` at an explicit offset (no group, no commits), ``consume()`` in sized batches, each
batch turned into one Arrow record batch. Offsets missing inside the range are not loss: the
cleaner compacted records away, or they were transaction markers or aborted records. Loss is
when the range starts below the partition's log start offset (retention or DeleteRecords took
offsets the query still needed): it is reported with the exact lost offsets, as an error with
``failOnDataLoss`` (the default) or as a warning without.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message
from confluent_kafka import TopicPartition as KafkaTopicPartition

from strom.spark.cluster import consumer_settings
from strom.spark.offsets import OffsetRange
from strom.spark.schema import RecordBatchBuilder

__all__ = ["DataLossError", "FetchSettings", "lost_offsets", "read_range", "report_data_loss"]

log = logging.getLogger("strom.spark")

_POLL_S = 0.2
_GONE = frozenset({KafkaError.OFFSET_OUT_OF_RANGE, KafkaError._AUTO_OFFSET_RESET})


class DataLossError(RuntimeError):
    """Offsets the query needed are gone from the cluster (``failOnDataLoss`` is true)."""


@dataclass(frozen=True)
class FetchSettings:
    """What a task needs to read a range; plain data, pickled to executors."""

    client: dict[str, str]
    include_headers: bool
    fail_on_data_loss: bool
    poll_timeout_ms: int
    api_timeout_ms: int
    fetch_records: int


def lost_offsets(topic: str, partition: int, start: int, end: int) -> str:
    """How a lost range is named in errors and warnings."""
    return f"offsets [{start}, {end}) of {topic}-{partition} are lost"


def report_data_loss(message: str, *, fail: bool) -> None:
    """Raise (``failOnDataLoss=true``) or log a warning that data was lost."""
    if fail:
        raise DataLossError(
            f"{message}: retention or DeleteRecords removed them, or the topic was deleted, "
            "before the query read them. Set the source option 'failOnDataLoss' to 'false' "
            "to skip lost data with a warning instead of failing."
        )
    log.warning("%s; skipping them (failOnDataLoss=false)", message)


def read_range(offsets: OffsetRange, settings: FetchSettings) -> Iterator[Any]:
    """Arrow record batches of the records of ``offsets``, in offset order.

    The cyclic garbage collector is off while the range is read: each ``consume()`` makes
    thousands of ``Message`` objects (which the collector tracks, though they never form
    cycles), and the collections they trigger took ~40% of a task's time.
    """
    consumer = Consumer(consumer_settings(settings.client))
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield from _Fetch(consumer, offsets, settings).batches()
    finally:
        if collecting:
            gc.enable()
        consumer.close()


class _Fetch:
    """The state of one range being read: the next offset, and the consumer."""

    def __init__(self, consumer: Any, offsets: OffsetRange, settings: FetchSettings) -> None:
        self.consumer = consumer
        self.range = offsets
        self.settings = settings
        self.position = offsets.start
        self.builder = RecordBatchBuilder(include_headers=settings.include_headers)
        self.tp = KafkaTopicPartition(offsets.topic, offsets.partition)

    def batches(self) -> Iterator[Any]:
        self._skip_lost()
        if self.position >= self.range.end:
            return
        self._assign()
        idle_since = time.monotonic()
        done = False
        while not done and self.position < self.range.end:
            wanted = min(self.settings.fetch_records, self.range.end - self.position)
            kept, done = self._keep(self.consumer.consume(wanted, _POLL_S))
            if kept:
                idle_since = time.monotonic()
                yield self.builder.build(self.range.topic, self.range.partition, kept)
            elif time.monotonic() - idle_since > self.settings.poll_timeout_ms / 1000:
                raise TimeoutError(
                    f"no records of {self.range.topic}-{self.range.partition} at offset "
                    f"{self.position} (reading up to {self.range.end}) within "
                    f"{self.settings.poll_timeout_ms} ms (kafkaConsumer.pollTimeoutMs)"
                )

    def _keep(self, messages: list[Any]) -> tuple[list[Any], bool]:
        """The consumed records inside the range, and whether the range is done.

        The common case, records only and all inside the range, is decided by two C-level
        checks; error events or the range's end among them go record by record.
        """
        if (
            messages
            and not any(map(Message.error, messages))
            and messages[-1].offset() < self.range.end
        ):
            self.position = messages[-1].offset() + 1
            return messages, False
        kept: list[Any] = []
        for message in messages:
            error = message.error()
            if error is not None:
                if self._on_error(error):
                    return kept, True
                if self.position >= self.range.end:
                    break
                continue
            if message.offset() >= self.range.end:
                return kept, True
            kept.append(message)
            self.position = message.offset() + 1
        return kept, False

    def _assign(self) -> None:
        self.consumer.assign(
            [KafkaTopicPartition(self.range.topic, self.range.partition, self.position)]
        )

    def _log_start(self) -> int:
        try:
            low, _ = self.consumer.get_watermark_offsets(
                self.tp, timeout=self.settings.api_timeout_ms / 1000
            )
        except KafkaException as exc:
            raise RuntimeError(
                f"cannot get the offsets of {self.range.topic}-{self.range.partition}: "
                f"{exc.args[0]}"
            ) from None
        return int(low)

    def _skip_lost(self) -> None:
        """Report offsets below the log start offset as lost, and move past them."""
        low = self._log_start()
        if self.position < low:
            lost_to = min(low, self.range.end)
            report_data_loss(
                lost_offsets(self.range.topic, self.range.partition, self.position, lost_to),
                fail=self.settings.fail_on_data_loss,
            )
            self.position = lost_to

    def _on_error(self, error: Any) -> bool:
        """Handle an error event; True when the range is done."""
        code = error.code()
        if code == KafkaError._PARTITION_EOF:
            return True  # the rest of the range holds no records (markers, compacted away)
        if code in _GONE:
            before = self.position
            self._skip_lost()
            if self.position == before:
                # Not below the log start, so past the log end: the partition was truncated
                # or recreated, and the rest of the range is gone.
                report_data_loss(
                    lost_offsets(self.range.topic, self.range.partition, before, self.range.end),
                    fail=self.settings.fail_on_data_loss,
                )
                return True
            if self.position < self.range.end:
                self._assign()
            return False
        raise RuntimeError(
            f"reading {self.range.topic}-{self.range.partition} at offset {self.position}: "
            f"{error.str()}"
        )
