"""Long polls: a fetch waiting for ``min_bytes`` (Kafka's ``DelayedFetch``).

The replica manager's ``fetch_messages`` (Kafka's ``fetchMessages``) reads at once, and parks a
fetch that found too little here: in the follower purgatory, woken by every append, for a
follower; in the consumer purgatory, woken by high watermark moves, for a consumer; it reads
again once the operation completes. The operation sees the partitions through
:class:`FetchState` (the replica manager's ``partition``), not the replica manager itself.

``DelayedFetch`` completes when the bytes readable from its partitions reach ``min_bytes``
(counting what each advance made readable; for read_committed, what lies below the last stable
offset, re-measured on every advance, so a transaction's records count when its marker moves
the last stable offset, not when they are appended), or when one of its partitions changes in
a way the fetch must hear about (gone, led elsewhere, fetch offset out of range), or at
``max_wait``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from strom.common import ErrorCode, KafkaError, TopicPartition
from strom.server.replica.fetch_session import PartitionFetch, SessionPartition
from strom.server.replica.partition import Partition
from strom.server.replica.purgatory import DelayedOperation
from strom.server.replica.replica_results import (
    READ_COMMITTED,
    READ_UNCOMMITTED,
    HighWatermarkUpdate,
)
from strom.storage.fetch_isolation import FetchIsolation

__all__ = [
    "DelayedFetch",
    "FetchPartitionStatus",
    "FetchPartitions",
    "FetchState",
]

FetchPartitions = Sequence[tuple[SessionPartition, PartitionFetch]]
"""The partitions of a fetch, in request order, with what is asked of each."""


class FetchState(Protocol):
    """The partitions a waiting fetch reads (the replica manager)."""

    def partition(self, tp: TopicPartition, *, current_leader_epoch: int = -1) -> Partition:
        """The partition, led by this broker; raises KafkaError when it is not (or the leader
        epoch is not ``current_leader_epoch``)."""
        ...


@dataclass(slots=True)
class FetchPartitionStatus:
    """A waiting fetch's view of one partition."""

    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    readable: int = 0
    """Bytes known to be readable from the fetch offset (capped at ``max_bytes``)."""


class DelayedFetch(DelayedOperation):
    """A fetch waiting for ``min_bytes`` (see the module doc)."""

    def __init__(
        self,
        *,
        timeout_ms: int,
        min_bytes: int,
        partitions: dict[TopicPartition, FetchPartitionStatus],
        replica_manager: FetchState,
        isolation_level: int = READ_UNCOMMITTED,
    ) -> None:
        super().__init__(timeout_ms=timeout_ms)
        self.min_bytes = min_bytes
        self.partitions = partitions
        self.isolation_level = isolation_level
        self._replica_manager = replica_manager
        self._partition_left = False

    @property
    def readable(self) -> int:
        return sum(status.readable for status in self.partitions.values())

    def on_event(self, key: TopicPartition, update: HighWatermarkUpdate | None) -> None:
        status = self.partitions.get(key)
        if status is None or update is None or status.fetch_offset >= update.new:
            return
        if self.isolation_level == READ_COMMITTED:
            status.readable = self._committed_bytes(key, status)
            return
        # Everything that became readable counts when the fetch offset was below it; when the
        # offset is inside the new range, some of it does (an estimate: the answer re-reads).
        status.readable = min(status.max_bytes, status.readable + update.size)

    def on_partition_left(self, key: TopicPartition, error: ErrorCode) -> None:
        self._partition_left = True  # the answer's read says which error

    def try_complete(self) -> bool:
        if self._partition_left:
            return self.force_complete()
        for tp, status in self.partitions.items():
            if self._must_answer(tp, status):
                return self.force_complete()
        if self.readable >= self.min_bytes:
            return self.force_complete()
        return False

    def _committed_bytes(self, tp: TopicPartition, status: FetchPartitionStatus) -> int:
        """Bytes readable below the last stable offset from the fetch offset (at most
        ``max_bytes``); what is already known when the partition is not readable now."""
        try:
            partition = self._replica_manager.partition(tp)
            if partition.log.last_stable_offset <= status.fetch_offset:
                return status.readable
            return partition.log.readable_bytes(
                status.fetch_offset,
                max_bytes=status.max_bytes,
                isolation=FetchIsolation.TXN_COMMITTED,
            )
        except KafkaError:
            return status.readable  # try_complete answers a partition gone or moved

    def _must_answer(self, tp: TopicPartition, status: FetchPartitionStatus) -> bool:
        """The partition changed in a way only an answer can tell the client."""
        try:
            partition = self._replica_manager.partition(
                tp, current_leader_epoch=status.current_leader_epoch
            )
        except KafkaError:
            return True  # gone, led elsewhere, or a new leader epoch
        return not (partition.log_start_offset <= status.fetch_offset <= partition.log_end_offset)
