"""The source's readers: batch (``spark.read``) and streaming (``spark.readStream``).

Both plan one Spark partition per topic-partition offset range (more with ``minPartitions``) and
read each range with ``strom.spark.fetch``. The streaming reader lives in one Python process on
the driver for the whole query, so it keeps what Spark's Kafka source keeps between triggers:
the starting offsets of newly discovered partitions, the time of the last trigger
(``maxTriggerDelay``), and the target offsets of ``Trigger.AvailableNow``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from typing import Any

from confluent_kafka import Consumer, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)

from strom.common import TopicPartition
from strom.spark.cluster import Cluster, consumer_settings
from strom.spark.fetch import (
    DataLossError,
    FetchSettings,
    log_read_path,
    lost_offsets,
    read_range,
    report_data_loss,
)
from strom.spark.offsets import (
    OffsetRange,
    PartitionOffsets,
    from_json_dict,
    prorate,
    split_ranges,
    to_json_dict,
)
from strom.spark.options import ReadOptions

__all__ = ["RangePartition", "StromBatchReader", "StromStreamReader"]

log = logging.getLogger("strom.spark")


class RangePartition(InputPartition):
    """One Spark partition: an offset range of one topic-partition."""

    def __init__(self, offsets: OffsetRange) -> None:
        super().__init__(offsets)
        self.offsets = offsets


def _fetch_settings(options: ReadOptions) -> FetchSettings:
    return FetchSettings(
        client=options.client,
        include_headers=options.include_headers,
        fail_on_data_loss=options.fail_on_data_loss,
        poll_timeout_ms=options.poll_timeout_ms,
        api_timeout_ms=options.api_timeout_ms,
        fetch_records=options.fetch_records,
    )


def _name(tp: TopicPartition) -> str:
    return f"{tp.topic}-{tp.partition}"


def _clip_lost(cluster: Cluster, ranges: list[OffsetRange], *, fail: bool) -> list[OffsetRange]:
    """The ranges, each starting no lower than its partition's log start offset.

    Offsets retention or DeleteRecords already removed are reported here, on the driver, where
    the query's log and error are; tasks check again, since more may go before they read.
    """
    wanted = [TopicPartition(r.topic, r.partition) for r in ranges if r.size > 0]
    earliest = cluster.earliest(wanted)
    out: list[OffsetRange] = []
    for r in ranges:
        low = earliest.get(TopicPartition(r.topic, r.partition), r.start)
        if r.start < low:
            kept_from = min(low, r.end)
            report_data_loss(lost_offsets(r.topic, r.partition, r.start, kept_from), fail=fail)
            out.append(OffsetRange(r.topic, r.partition, kept_from, r.end))
        else:
            out.append(r)
    return out


def _clip_past_end(cluster: Cluster, ranges: list[OffsetRange], *, fail: bool) -> list[OffsetRange]:
    """The ranges, each ending no higher than its partition's log end offset.

    An ``endingOffsets`` offset past the log end names records that do not exist: as Spark's
    Kafka source does, the query fails (``failOnDataLoss``) or reads up to the end and warns.
    """
    latest = cluster.latest([TopicPartition(r.topic, r.partition) for r in ranges])
    out: list[OffsetRange] = []
    for r in ranges:
        high = latest.get(TopicPartition(r.topic, r.partition), r.end)
        if r.end <= high:
            out.append(r)
            continue
        message = (
            f"endingOffsets asks for {r.topic}-{r.partition} up to offset {r.end}, but its log "
            f"ends at {high}: offsets [{high}, {r.end}) do not exist"
        )
        if fail:
            raise DataLossError(
                f"{message}. Set the source option 'failOnDataLoss' to 'false' to read up to "
                "the log end with a warning instead."
            )
        log.warning("%s; reading up to the log end (failOnDataLoss=false)", message)
        out.append(OffsetRange(r.topic, r.partition, min(r.start, high), high))
    return out


class StromBatchReader(DataSourceReader):
    """``spark.read.format("strom")``: the ranges between the starting and ending offsets."""

    def __init__(self, options: ReadOptions) -> None:
        log_read_path(options.client)
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        options = self.options
        cluster = Cluster(options.client, timeout_ms=options.api_timeout_ms)
        try:
            tps = cluster.partitions(options.subscription)
            start = cluster.resolve(
                options.starting,
                tps,
                starting=True,
                timestamp_not_found_latest=options.timestamp_not_found_latest,
            )
            end = cluster.resolve(options.ending, tps, starting=False)
            ranges: list[OffsetRange] = []
            for tp in tps:
                if end[tp] < start[tp]:
                    raise ValueError(
                        f"the ending offset {end[tp]} of {_name(tp)} is before its starting "
                        f"offset {start[tp]}"
                    )
                ranges.append(OffsetRange(tp.topic, tp.partition, start[tp], end[tp]))
            ranges = _clip_lost(cluster, ranges, fail=options.fail_on_data_loss)
            ranges = _clip_past_end(cluster, ranges, fail=options.fail_on_data_loss)
        finally:
            cluster.close()
        return [RangePartition(r) for r in split_ranges(ranges, options.min_partitions)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, RangePartition)
        yield from read_range(partition.offsets, _fetch_settings(self.options))


class StromStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format("strom")``: micro-batches of offset ranges, admission-controlled.

    Limits (``maxOffsetsPerTrigger``, ``maxBytesPerTrigger``, ``minOffsetsPerTrigger`` with
    ``maxTriggerDelay``) all apply whenever Spark passes a limit other than "all available";
    ``getDefaultReadLimit`` tells Spark that some limit is configured.
    """

    def __init__(self, options: ReadOptions) -> None:
        log_read_path(options.client)
        self.options = options
        self._cluster: Cluster | None = None
        self._group: Any = None
        self._target: PartitionOffsets | None = None
        self._new_starts: PartitionOffsets = {}
        self._last_trigger: float | None = None  # when minOffsetsPerTrigger last let a batch go
        self._latest: PartitionOffsets | None = None
        self._committed: dict[str, Any] | None = None
        self._initial: dict[str, Any] | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_cluster"] = None
        state["_group"] = None
        return state

    @property
    def cluster(self) -> Cluster:
        if self._cluster is None:
            self._cluster = Cluster(self.options.client, timeout_ms=self.options.api_timeout_ms)
        return self._cluster

    def initialOffset(self) -> dict[str, Any]:
        """The query's starting offsets, resolved once: Spark asks again when it runs the first
        batch (as that batch's start), and a second ListOffsets of ``latest`` would answer past
        the end it already planned (a false "went back") or skip what arrived in between."""
        if self._initial is None:
            options = self.options
            tps = self.cluster.partitions(options.subscription)
            offsets = self.cluster.resolve(
                options.starting,
                tps,
                starting=True,
                timestamp_not_found_latest=options.timestamp_not_found_latest,
            )
            self._initial = to_json_dict(offsets)
        return self._initial

    def getDefaultReadLimit(self) -> ReadLimit:
        options = self.options
        if options.max_offsets_per_trigger is not None:
            return ReadMaxRows(options.max_offsets_per_trigger)
        if options.max_bytes_per_trigger is not None:
            return ReadMaxBytes(options.max_bytes_per_trigger)
        if options.min_offsets_per_trigger is not None:
            return ReadMinRows(options.min_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        tps = self.cluster.partitions(self.options.subscription)
        self._target = self.cluster.latest(tps)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        self._commit_to_group(start)
        begin = self._begin(from_json_dict(start))
        latest = self._target if self._target is not None else self.cluster.latest(begin)
        self._latest = latest
        end = dict(latest) if isinstance(limit, ReadAllAvailable) else self._admit(begin, latest)
        return to_json_dict(end)

    def _begin(self, start: PartitionOffsets) -> PartitionOffsets:
        """Where each partition read now starts: new partitions from their earliest offset,
        vanished partitions reported as lost and dropped."""
        if self._target is not None:
            current = sorted(self._target)
        else:
            current = self.cluster.partitions(self.options.subscription)
        fail = self.options.fail_on_data_loss
        for tp in sorted(set(start) - set(current)):
            report_data_loss(
                f"{_name(tp)} is gone (its topic was deleted?): offsets from {start[tp]} on "
                "may be lost",
                fail=fail,
            )
        added = [tp for tp in current if tp not in start and tp not in self._new_starts]
        if added:
            earliest = self.cluster.earliest(added)
            for tp in added:
                log.info("strom source: reading new partition %s from %d", _name(tp), earliest[tp])
                if earliest[tp] != 0:
                    report_data_loss(
                        lost_offsets(tp.topic, tp.partition, 0, earliest[tp]), fail=fail
                    )
            self._new_starts.update(earliest)
        return {tp: start[tp] if tp in start else self._new_starts[tp] for tp in current}

    def _admit(self, begin: PartitionOffsets, latest: PartitionOffsets) -> PartitionOffsets:
        """End offsets within the configured limits.

        As Spark's Kafka source, ``minOffsetsPerTrigger`` holds a batch back until enough offsets
        are there or ``maxTriggerDelay`` has passed since it last let one go (the first trigger
        always goes); the delay restarts even when nothing was there to read.
        """
        options = self.options
        if options.min_offsets_per_trigger is not None and self._target is None:
            now = time.monotonic()
            lag = sum(max(0, latest[tp] - begin[tp]) for tp in latest)
            if (
                self._last_trigger is not None
                and (now - self._last_trigger) * 1000 < options.max_trigger_delay_ms
                and lag < options.min_offsets_per_trigger
            ):
                return {tp: begin[tp] for tp in latest}
            self._last_trigger = now
        end = dict(latest)
        if options.max_offsets_per_trigger is not None:
            end = prorate(begin, end, options.max_offsets_per_trigger)
        if options.max_bytes_per_trigger is not None:
            end = self.cluster.byte_limited(begin, end, options.max_bytes_per_trigger)
        return end

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return None if self._latest is None else to_json_dict(self._latest)

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        begin = from_json_dict(start)
        until = from_json_dict(end)
        unknown = [tp for tp in until if tp not in begin and tp not in self._new_starts]
        if unknown:  # a batch planned before a restart that added partitions
            self._new_starts.update(self.cluster.earliest(unknown))
        ranges: list[OffsetRange] = []
        for tp, stop in sorted(until.items()):
            first = begin.get(tp, self._new_starts.get(tp, 0))
            if stop < first:
                report_data_loss(
                    f"the offset of {_name(tp)} went back from {first} to {stop} (the topic "
                    f"was recreated?): offsets [{stop}, {first}) were read before",
                    fail=self.options.fail_on_data_loss,
                )
                continue
            ranges.append(OffsetRange(tp.topic, tp.partition, first, stop))
        ranges = _clip_lost(self.cluster, ranges, fail=self.options.fail_on_data_loss)
        return [RangePartition(r) for r in split_ranges(ranges, self.options.min_partitions)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, RangePartition)
        yield from read_range(partition.offsets, _fetch_settings(self.options))

    def commit(self, end: dict[str, Any]) -> None:
        self._commit_to_group(end)

    def _commit_to_group(self, offsets: dict[str, Any]) -> None:
        """With ``commitToGroup``, commit offsets of completed batches to that group.

        Spark tells a source a batch is done (``commit``) only when it plans the next one, so
        ``latestOffset`` commits its ``start`` too: the end of the batch that just completed.
        A failed commit is a warning; the query's own offsets are in its checkpoint.
        """
        group = self.options.commit_to_group
        if group is None or offsets == self._committed:
            return
        partitions = [
            KafkaTopicPartition(tp.topic, tp.partition, offset)
            for tp, offset in sorted(from_json_dict(offsets).items())
        ]
        try:
            if self._group is None:
                self._group = Consumer(
                    {**consumer_settings(self.options.client), "group.id": group}
                )
            self._group.commit(offsets=partitions, asynchronous=False)
            self._committed = offsets
        except KafkaException as exc:
            log.warning("strom source: cannot commit offsets to group %r: %s", group, exc)

    def stop(self) -> None:
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None
        if self._group is not None:
            self._group.close()
            self._group = None
