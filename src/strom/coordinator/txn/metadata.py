"""One transactional id's state (Kafka's ``TransactionMetadata``), as plain data.

The coordinator changes it in two steps, as Kafka does: :meth:`TransactionMetadata.prepare`
computes the next state (a copy) and marks the change pending; the copy is written to
``__transaction_state``; only when the write succeeded does :meth:`complete` make it current.
A failed write just clears the pending mark. While a change is pending, other requests for the
id answer CONCURRENT_TRANSACTIONS, except that one change may be prepared from a pending
Complete record (the coordinator's :meth:`~strom.coordinator.txn.TransactionCoordinator.
add_partitions`): it goes in the log after it, and becomes pending when that one completes.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass, field

from strom.common import TopicPartition
from strom.coordinator.txn.records import TransactionLogValue, TxnPartitions
from strom.coordinator.txn.state import TransactionState, check_transition

__all__ = ["NO_PRODUCER_EPOCH", "NO_PRODUCER_ID", "TransactionMetadata", "is_epoch_exhausted"]

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_PRODUCER_EPOCH = 2**15 - 1


def is_epoch_exhausted(epoch: int) -> bool:
    """Kafka keeps the last epoch for fencing bumps: at ``Short.MAX_VALUE - 1`` a producer
    needs a new producer id."""
    return epoch >= MAX_PRODUCER_EPOCH - 1


@dataclass(slots=True)
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TransactionState
    partitions: frozenset[TopicPartition] = frozenset()
    start_timestamp_ms: int = -1
    """When the open transaction began (-1: none is open)."""
    last_update_timestamp_ms: int = -1
    previous_producer_id: int = NO_PRODUCER_ID
    """The producer id before the last one (a new id after an exhausted epoch)."""
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    """The epoch before the last bump the producer asked for (KIP-360), in memory only: a
    retried InitProducerId whose answer was lost carries it. -1 after a new instance's
    InitProducerId or a coordinator's fencing abort, so the replaced producer stays fenced."""
    pending: TransactionMetadata | None = field(default=None, repr=False)
    """The next state while its record is being written (its own ``pending``: a change
    prepared from it meanwhile, written after it)."""

    def prepare(self, state: TransactionState, **changes: object) -> TransactionMetadata:
        """The next state (checked against the transition table), marked pending."""
        check_transition(self.state, state)
        if self.pending is not None:
            raise RuntimeError(f"{self.transactional_id}: a change is already pending")
        target = dataclasses.replace(self, state=state, pending=None, **changes)  # type: ignore[arg-type]
        self.pending = target
        return target

    def complete(self, target: TransactionMetadata) -> None:
        """The pending change is written: it becomes the current state, and the change
        prepared from it, if any, the pending one."""
        for name in (
            "producer_id",
            "producer_epoch",
            "timeout_ms",
            "state",
            "partitions",
            "start_timestamp_ms",
            "last_update_timestamp_ms",
            "previous_producer_id",
            "last_producer_epoch",
        ):
            setattr(self, name, getattr(target, name))
        self.pending = target.pending

    def to_value(self) -> TransactionLogValue:
        by_topic: defaultdict[str, list[int]] = defaultdict(list)
        for tp in sorted(self.partitions):
            by_topic[tp.topic].append(tp.partition)
        return TransactionLogValue(
            producer_id=self.producer_id,
            producer_epoch=self.producer_epoch,
            transaction_timeout_ms=self.timeout_ms,
            transaction_status=self.state.id,
            transaction_partitions=tuple(
                TxnPartitions(topic, tuple(ids)) for topic, ids in by_topic.items()
            ),
            transaction_last_update_timestamp_ms=self.last_update_timestamp_ms,
            transaction_start_timestamp_ms=self.start_timestamp_ms,
            previous_producer_id=self.previous_producer_id,
        )

    @classmethod
    def from_value(cls, transactional_id: str, value: TransactionLogValue) -> TransactionMetadata:
        return cls(
            transactional_id=transactional_id,
            producer_id=value.producer_id,
            producer_epoch=value.producer_epoch,
            timeout_ms=value.transaction_timeout_ms,
            state=TransactionState.from_id(value.transaction_status),
            partitions=frozenset(
                TopicPartition(entry.topic, partition)
                for entry in value.transaction_partitions or ()
                for partition in entry.partition_ids
            ),
            start_timestamp_ms=value.transaction_start_timestamp_ms,
            last_update_timestamp_ms=value.transaction_last_update_timestamp_ms,
            previous_producer_id=value.previous_producer_id,
        )
