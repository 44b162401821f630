"""The transaction coordinator, without I/O (see ``NOTES.md``)."""

from strom.coordinator.partitions import partition_for
from strom.coordinator.txn.coordinator import (
    FINISHING_HOLD_MS,
    InitProducerIdResult,
    TransactionCoordinator,
    TransactionWriter,
    TxnSettings,
)
from strom.coordinator.txn.metadata import TransactionMetadata
from strom.coordinator.txn.records import TransactionLogRecord
from strom.coordinator.txn.state import TransactionState

__all__ = [
    "FINISHING_HOLD_MS",
    "InitProducerIdResult",
    "TransactionCoordinator",
    "TransactionLogRecord",
    "TransactionMetadata",
    "TransactionState",
    "TransactionWriter",
    "TxnSettings",
    "partition_for",
]
