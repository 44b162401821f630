"""Fetches: read with the byte budget, answer at once or wait for ``min_bytes`` (Kafka's
``ReplicaManager.fetchMessages``, ``readFromLog`` and ``DelayedFetch``).

:func:`read_from_log` reads the partitions in request order: each up to its
``partition_max_bytes`` and what is left of the request's ``max_bytes``; the first batch of
the first partition with data comes whole even when larger (KIP-74). A consumer reads up to
the high watermark (read_uncommitted) or the last stable offset (read_committed,
``ReplicaManager.read``); a follower (``FetchParams.replica_id`` >= 0) up to the log end, or
learns where its log diverged, and its position is recorded (``ReplicaManager.read_for_follower``).
A partition named by a topic id the metadata does not know (or knows for another name) is
UNKNOWN_TOPIC_ID.

:func:`fetch_messages` answers at once when ``max_wait`` is 0, when no partition was asked
for, when ``min_bytes`` are readable, or when a partition has an error or a diverging epoch;
otherwise the fetch waits as a ``DelayedFetch`` (in the follower purgatory, woken by every
append, for a follower; in the consumer purgatory, woken by high watermark moves, for a
consumer) and reads again once it completes.

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
from typing import TYPE_CHECKING

from strom.common import ErrorCode, KafkaError, TopicPartition
from strom.server.replica.fetch_session import PartitionFetch, SessionPartition
from strom.server.replica.purgatory import DelayedOperation, Purgatory
from strom.server.replica.replica_results import (
    READ_COMMITTED,
    READ_UNCOMMITTED,
    FetchParams,
    HighWatermarkUpdate,
    ReadResultInfo,
)
from strom.storage.fetch_isolation import FetchIsolation

if TYPE_CHECKING:
    from strom.server.replica.replica_manager import ReplicaManager

__all__ = [
    "DelayedFetch",
    "FetchPartitionStatus",
    "FetchPartitions",
    "fetch_messages",
    "read_from_log",
]

FetchPartitions = Sequence[tuple[SessionPartition, PartitionFetch]]
"""The partitions of a fetch, in request order, with what is asked of each."""


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
        replica_manager: ReplicaManager,
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


# --- reading -------------------------------------------------------------------------------


def read_from_log(
    replica_manager: ReplicaManager, params: FetchParams, partitions: FetchPartitions
) -> list[ReadResultInfo]:
    """Kafka's ``readFromLog``: partitions in order, sharing ``max_bytes`` (see the module
    doc); one result per partition, in order."""
    remaining = params.max_bytes
    min_one_message = True
    image = replica_manager.image
    reads: list[ReadResultInfo] = []
    for key, request in partitions:
        if key.topic_id is not None:
            topic = image.topics.get_topic(key.topic) if key.topic else None
            if topic is None or topic.topic_id != key.topic_id:
                reads.append(
                    ReadResultInfo(
                        error=ErrorCode.unknown_topic_id,
                        message=f"unknown topic id {key.topic_id}",
                    )
                )
                continue
        tp = TopicPartition(key.topic, key.partition)
        budget = max(0, min(request.partition_max_bytes, remaining))
        if params.is_from_follower:
            read = replica_manager.read_for_follower(
                tp,
                replica_id=params.replica_id,
                replica_epoch=params.replica_epoch,
                fetch_offset=request.fetch_offset,
                max_bytes=budget,
                current_leader_epoch=request.current_leader_epoch,
                last_fetched_epoch=request.last_fetched_epoch,
            )
        else:
            read = replica_manager.read(
                tp,
                fetch_offset=request.fetch_offset,
                max_bytes=budget,
                min_one_message=min_one_message,
                isolation_level=params.isolation_level,
                current_leader_epoch=request.current_leader_epoch,
            )
        size = read.size
        if size:
            min_one_message = False
            remaining = max(0, remaining - size)
        reads.append(read)
    return reads


async def fetch_messages(
    replica_manager: ReplicaManager,
    params: FetchParams,
    partitions: FetchPartitions,
    *,
    purgatory: Purgatory[DelayedFetch],
) -> list[ReadResultInfo]:
    """Read now, or wait in ``purgatory`` and read again (see the module doc). The caller owns
    the results' file regions."""
    reads = read_from_log(replica_manager, params, partitions)
    if (
        not partitions
        or params.max_wait_ms <= 0
        or sum(read.size for read in reads) >= params.min_bytes
        or any(read.error != ErrorCode.none or read.diverging_epoch is not None for read in reads)
    ):
        return reads
    statuses = {
        TopicPartition(key.topic, key.partition): FetchPartitionStatus(
            fetch_offset=request.fetch_offset,
            max_bytes=request.partition_max_bytes,
            current_leader_epoch=request.current_leader_epoch,
            readable=read.size,
        )
        for (key, request), read in zip(partitions, reads, strict=True)
    }
    for read in reads:
        read.close()
    operation = DelayedFetch(
        timeout_ms=params.max_wait_ms,
        min_bytes=params.min_bytes,
        partitions=statuses,
        replica_manager=replica_manager,
        isolation_level=params.isolation_level,
    )
    if not purgatory.try_complete_else_watch(operation, statuses):
        await operation.wait()
    return read_from_log(replica_manager, params, partitions)
