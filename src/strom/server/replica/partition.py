"""One partition with a replica on this broker (Kafka's ``cluster.Partition``): its log, its
registration in the metadata, and while this broker leads it the leader's view of its
followers; with what a follower and the offset APIs do to one partition's log.

* ``append_as_follower``: the leader's batches appended as they are, then the leader's high
  watermark (at most this log's end) and log start offset taken.
* ``truncate_to_diverging``: the leader says this log went another way after an epoch; cut it
  where KIP-279 says (:func:`strom.storage.leader_epoch_cache.truncation_offset`).
* ``reset_to_leader``: the leader answered OFFSET_OUT_OF_RANGE (Kafka's
  ``handleOutOfRangeError``): a log ahead of the leader's end is cut to it (an unclean
  election), one behind the leader's start starts over there.
* ``offset_for_timestamp``: ListOffsets for one partition.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass, field
from typing import Final

from strom.common import ErrorCode, KafkaError, TopicPartition
from strom.metadata.image import PartitionRegistration
from strom.replication.partition_replication import PartitionReplication
from strom.server.replica.replica_results import (
    READ_COMMITTED,
    READ_LOG_END,
    OffsetAnswer,
)
from strom.storage.leader_epoch_cache import EpochEndOffset, truncation_offset
from strom.storage.partition_log import (
    EARLIEST_LOCAL_TIMESTAMP,
    EARLIEST_TIMESTAMP,
    LATEST_TIMESTAMP,
    MAX_TIMESTAMP,
    FetchIsolation,
    PartitionLog,
)

__all__ = ["LATEST_TIERED_TIMESTAMP", "Partition", "fetch_isolation"]

log = logging.getLogger(__name__)

LATEST_TIERED_TIMESTAMP: Final = -5
"""ListOffsets v9+ (KIP-1005): the highest offset in tiered storage; -1 without tiering."""


@dataclass(slots=True, eq=False)
class Partition:
    """A partition with a replica on this broker: its log (which holds the high watermark)
    and, while this broker leads it, the leader's view of its followers (``replication``)."""

    tp: TopicPartition
    log: PartitionLog
    registration: PartitionRegistration
    replication: PartitionReplication | None = None
    """The leader's bookkeeping (followers, ISR, acks); None on a follower."""
    _unreplicated: deque[tuple[int, int]] = field(default_factory=deque)
    """(next offset, size) of each append above the high watermark, oldest first."""

    @property
    def is_leader(self) -> bool:
        return self.replication is not None

    @property
    def leader_epoch(self) -> int:
        return self.registration.leader_epoch

    @property
    def isr(self) -> tuple[int, ...]:
        """The ISR as this broker knows it: the leader's latest, else the metadata's."""
        if self.replication is not None:
            return self.replication.isr
        return self.registration.isr

    @property
    def log_start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    # --- a follower's log ----------------------------------------------------------------

    def append_as_follower(
        self, records: bytes, *, high_watermark: int, log_start_offset: int
    ) -> int:
        """Append what the leader sent (whole batches, offsets as the leader's), then take the
        leader's high watermark and log start offset; the number of bytes appended."""
        partition_log = self.log
        size = partition_log.append_as_follower(records).size if records else 0
        if log_start_offset > partition_log.log_start_offset:
            partition_log.advance_log_start_offset(
                min(log_start_offset, partition_log.log_end_offset)
            )
        partition_log.maybe_increment_high_watermark(
            min(high_watermark, partition_log.log_end_offset)
        )
        return size

    def truncate_to_diverging(self, diverging: EpochEndOffset) -> int:
        """Cut the log after ``diverging`` (the leader's epoch and its end offset) where KIP-279
        says; the new log end offset."""
        partition_log = self.log
        cut = truncation_offset(
            diverging,
            partition_log.leader_epochs,
            log_end_offset=partition_log.log_end_offset,
            high_watermark=partition_log.high_watermark,
        )
        if cut.offset < partition_log.log_end_offset:
            log.info(
                "%s: truncating from %d to %d (the leader's epoch %d ends at %d)",
                self.tp,
                partition_log.log_end_offset,
                cut.offset,
                diverging.epoch,
                diverging.end_offset,
            )
        partition_log.truncate_to(cut.offset)  # at the log end: drops an empty last epoch
        return partition_log.log_end_offset

    def reset_to_leader(self, *, leader_start: int, leader_end: int) -> int:
        """After OFFSET_OUT_OF_RANGE: cut a log ahead of the leader's end, restart one behind
        its start; the new log end offset."""
        partition_log = self.log
        if partition_log.log_end_offset > leader_end:
            log.warning(
                "%s: truncating from %d to the leader's end %d (unclean leader election)",
                self.tp,
                partition_log.log_end_offset,
                leader_end,
            )
            partition_log.truncate_to(leader_end)
        elif partition_log.log_end_offset < leader_start:
            log.info("%s: starting over at the leader's log start %d", self.tp, leader_start)
            partition_log.truncate_fully_and_start_at(leader_start)
        return partition_log.log_end_offset

    # --- ListOffsets -------------------------------------------------------------------------

    def offset_for_timestamp(self, timestamp: int, *, isolation_level: int | None) -> OffsetAnswer:
        """ListOffsets for this partition; raises KafkaError.

        ``isolation_level`` None (a replica's or a debugging request) bounds nothing: latest
        is the log end offset. Otherwise latest is the high watermark / last stable offset and
        a timestamp lookup only finds offsets below it (Kafka's
        ``Partition.fetchOffsetForTimestamp``). No match: offset and timestamp -1.
        """
        epoch = self.leader_epoch
        isolation = (
            FetchIsolation.LOG_END if isolation_level is None else fetch_isolation(isolation_level)
        )
        last_fetchable = self.log.fetchable_offset(isolation)
        if timestamp == LATEST_TIMESTAMP:
            return OffsetAnswer(last_fetchable, -1, epoch)
        if timestamp in (EARLIEST_TIMESTAMP, EARLIEST_LOCAL_TIMESTAMP):
            return OffsetAnswer(self.log_start_offset, -1, epoch)
        if timestamp == LATEST_TIERED_TIMESTAMP:
            return OffsetAnswer(-1, -1, -1)  # nothing is tiered
        if timestamp < 0 and timestamp != MAX_TIMESTAMP:
            raise KafkaError(
                ErrorCode.invalid_request,
                f"unsupported special timestamp {timestamp} for {self.tp}",
            )
        found = self.log.offset_for_timestamp(timestamp)
        if found is None or (isolation_level is not None and found.offset >= last_fetchable):
            return OffsetAnswer(-1, -1, -1)
        return OffsetAnswer(found.offset, found.timestamp, epoch)


def fetch_isolation(isolation_level: int) -> FetchIsolation:
    """Where a read stops (Kafka's ``FetchIsolation.of``): the log end for a replica
    (READ_LOG_END), the high watermark or the last stable offset for a consumer."""
    if isolation_level == READ_COMMITTED:
        return FetchIsolation.TXN_COMMITTED
    if isolation_level == READ_LOG_END:
        return FetchIsolation.LOG_END
    return FetchIsolation.HIGH_WATERMARK
