"""How far a read may go (Kafka's ``FetchIsolation``): the partition log turns it into the
offset no read passes (:meth:`strom.storage.partition_log.PartitionLog.fetchable_offset`)."""

from __future__ import annotations

import enum

__all__ = ["FetchIsolation"]


class FetchIsolation(enum.Enum):
    LOG_END = "log_end"
    """Everything in the log: a follower's fetch, or the log's own readers."""
    HIGH_WATERMARK = "high_watermark"
    """What every in-sync replica has: a read_uncommitted consumer."""
    TXN_COMMITTED = "txn_committed"
    """Below the last stable offset: a read_committed consumer."""
