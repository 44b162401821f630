"""What the partition log's append and read return: :class:`AppendInfo`, :class:`ReadResult`,
and the follower append's :class:`UnexpectedAppendOffsetError`.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import TracebackType
from typing import Final

from strom.common import ErrorCode, KafkaError
from strom.protocol.batch import BatchHeader
from strom.storage.file_region import FileRegion

__all__ = ["AppendInfo", "ReadResult", "UnexpectedAppendOffsetError"]


class UnexpectedAppendOffsetError(KafkaError):
    """A follower append whose first offset is below the log end offset (Kafka's
    ``UnexpectedAppendOffsetException``): the fetcher must truncate or refetch."""

    def __init__(self, message: str, *, first_offset: int, log_end_offset: int) -> None:
        super().__init__(ErrorCode.unknown_server_error, message)
        self.first_offset = first_offset
        self.log_end_offset = log_end_offset


class AppendInfo:
    """What an append did (read-only; built once per append, its headers only when asked)."""

    __slots__ = (
        "_batches",
        "_written",
        "base_offset",
        "last_offset",
        "log_append_time",
        "log_start_offset",
        "max_timestamp",
        "size",
    )

    def __init__(
        self,
        *,
        base_offset: int,
        last_offset: int,
        log_append_time: int,
        max_timestamp: int,
        log_start_offset: int,
        written: bytes | bytearray,
    ) -> None:
        self.base_offset: Final = base_offset
        """The first offset assigned."""
        self.last_offset: Final = last_offset
        self.log_append_time: Final = log_append_time
        """The broker time written into LogAppendTime batches; -1 (NO_TIMESTAMP) for CreateTime."""
        self.max_timestamp: Final = max_timestamp
        self.log_start_offset: Final = log_start_offset
        self.size: Final = len(written)
        """Bytes appended."""
        self._written = written
        self._batches: tuple[BatchHeader, ...] | None = None

    @property
    def batches(self) -> tuple[BatchHeader, ...]:
        """The headers as written (offsets, epoch, timestamps, CRC), decoded on first use
        from the appended bytes (a private copy nobody else changes)."""
        if self._batches is None:
            headers: list[BatchHeader] = []
            position = 0
            while position < self.size:
                header = BatchHeader.read(self._written, position)
                headers.append(header)
                position += header.size
            self._batches = tuple(headers)
        return self._batches

    def __repr__(self) -> str:
        return (
            f"AppendInfo(base_offset={self.base_offset}, last_offset={self.last_offset}, "
            f"log_append_time={self.log_append_time}, max_timestamp={self.max_timestamp}, "
            f"log_start_offset={self.log_start_offset}, size={self.size})"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadResult:
    """The log's bytes from the batch holding the fetch offset, as file regions.

    As Kafka's fetch: the last batch may be cut short by the byte limit (clients drop a
    partial trailing batch); see :meth:`PartitionLog.read`. The regions belong to the caller:
    send them, then ``close()`` (or use ``with``). See :mod:`strom.storage.file_region` for
    why a region survives its segment's deletion.
    """

    regions: tuple[FileRegion, ...]
    next_offset: int
    """The offset after the last whole batch returned (the fetch offset when none is)."""
    log_start_offset: int
    log_end_offset: int

    @property
    def size(self) -> int:
        return sum(region.length for region in self.regions)

    def read(self) -> bytes:
        """All the regions' bytes (they stay open)."""
        return b"".join(region.read() for region in self.regions)

    def close(self) -> None:
        for region in self.regions:
            region.close()

    def __enter__(self) -> ReadResult:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
