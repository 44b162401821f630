"""The transaction coordinator, without I/O (see ``NOTES.md``)."""

from strom.coordinator.partitions import partition_for
from strom.coordinator.txn.coordinator import (
    InitProducerIdResult,
    TransactionCoordinator,
    TransactionWriter,
    TxnSettings,
)
from strom.coordinator.txn.metadata import TransactionMetadata
from strom.coordinator.txn.records import TransactionLogRecord
from strom.coordinator.txn.state import TransactionState

__all__ = [
    "InitProducerIdResult",
    "TransactionCoordinator",
    "TransactionLogRecord",
    "TransactionMetadata",
    "TransactionState",
    "TransactionWriter",
    "TxnSettings",
    "partition_for",
]
