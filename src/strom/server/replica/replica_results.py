"""The values the replica manager takes and answers: isolation levels, fetch parameters, one
partition's append, read or ListOffsets result, a high watermark move, what a metadata change
asks of the fetchers.

They live apart from ``replica_manager`` so that the delayed operations beside it
(``delayed_produce``, ``delayed_fetch``), which the replica manager owns, can use them without
importing it; ``replica_manager`` re-exports them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Final

from strom.common import ErrorCode, TopicPartition
from strom.storage.file_region import FileRegion
from strom.storage.log_validator import RecordError
from strom.storage.txn_index import AbortedTxn

__all__ = [
    "ACKS_TIMED_OUT_MESSAGE",
    "READ_COMMITTED",
    "READ_LOG_END",
    "READ_UNCOMMITTED",
    "AppendResult",
    "FetchParams",
    "FollowTarget",
    "HighWatermarkUpdate",
    "LeadershipChanges",
    "OffsetAnswer",
    "ReadResultInfo",
]

READ_UNCOMMITTED: Final = 0
READ_COMMITTED: Final = 1
READ_LOG_END: Final = -1
"""A follower's reads: up to the log end offset (no isolation level on the wire)."""
ACKS_TIMED_OUT_MESSAGE: Final = (
    "the batch was appended but not replicated within the request timeout"
)


@dataclass(frozen=True, slots=True)
class HighWatermarkUpdate:
    """The high watermark of a partition moved from ``old`` to ``new``; ``size`` bytes of
    batches lie between them (what a waiting fetch at or below ``old`` may now read)."""

    old: int
    new: int
    size: int


@dataclass(frozen=True, slots=True, kw_only=True)
class AppendResult:
    """One partition's answer to a produce."""

    error: ErrorCode = ErrorCode.none
    message: str | None = None
    base_offset: int = -1
    last_offset: int = -1
    log_append_time: int = -1
    log_start_offset: int = -1
    record_errors: tuple[RecordError, ...] = ()
    """Produce v8+: the records that made the batch fail (index in the batch, message)."""

    @classmethod
    def failed(
        cls,
        error: ErrorCode,
        message: str,
        record_errors: tuple[RecordError, ...] = (),
        *,
        log_start_offset: int = -1,
    ) -> AppendResult:
        return cls(
            error=error,
            message=message,
            record_errors=record_errors,
            log_start_offset=log_start_offset,
        )

    @property
    def appended(self) -> bool:
        """The batch is in the log (its acks=all outcome may still be an error)."""
        return self.base_offset >= 0

    def acknowledged(self, outcome: ErrorCode) -> AppendResult:
        """This appended batch with its acks=all ``outcome``: itself when NONE, else that
        error (REQUEST_TIMED_OUT saying the batch is in the leader's log)."""
        if outcome == ErrorCode.none:
            return self
        message = ACKS_TIMED_OUT_MESSAGE if outcome == ErrorCode.request_timed_out else None
        return dataclasses.replace(self, error=outcome, message=message)


@dataclass(slots=True, kw_only=True)
class ReadResultInfo:
    """One partition's answer to a fetch; ``regions`` belong to the caller (close them)."""

    error: ErrorCode = ErrorCode.none
    message: str | None = None
    regions: tuple[FileRegion, ...] = ()
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1
    aborted_transactions: tuple[AbortedTxn, ...] | None = None
    """read_committed: the aborted transactions overlapping the read; None otherwise."""
    diverging_epoch: tuple[int, int] | None = None
    """A follower's fetch: (epoch, end offset) where its log left the leader's (KIP-320)."""

    @property
    def size(self) -> int:
        return sum(region.length for region in self.regions)

    def close(self) -> None:
        for region in self.regions:
            region.close()


@dataclass(frozen=True, slots=True, kw_only=True)
class FetchParams:
    """A fetch request's request-level settings (Kafka's ``FetchParams``)."""

    replica_id: int = -1
    """The fetching follower's broker id; -1 for a consumer."""
    replica_epoch: int = -1
    """The follower's broker epoch (Fetch v15+, KIP-903); -1 when the request does not say."""
    max_wait_ms: int = 0
    min_bytes: int = 1
    max_bytes: int = 2**31 - 1
    """What all partitions share, in request order (the first batch comes whole, KIP-74)."""
    isolation_level: int = READ_UNCOMMITTED
    """READ_UNCOMMITTED or READ_COMMITTED for a consumer, READ_LOG_END for a follower."""

    @property
    def is_from_follower(self) -> bool:
        return self.replica_id >= 0


@dataclass(frozen=True, slots=True)
class OffsetAnswer:
    """ListOffsets' answer for one partition: offset, its timestamp and leader epoch."""

    offset: int
    timestamp: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class FollowTarget:
    """Where a follower fetches a partition from: the leader and its epoch."""

    leader_id: int
    leader_epoch: int


@dataclass(slots=True)
class LeadershipChanges:
    """What a metadata change asks of the fetchers (Kafka's ``applyDelta`` outcome)."""

    follow: dict[TopicPartition, FollowTarget] = field(default_factory=dict)
    """Partitions this broker follows now, with their (possibly new) leader."""
    stop: set[TopicPartition] = field(default_factory=set)
    """Partitions not to fetch any more: led here now, leaderless, or no replica here."""
