"""What a connection sends for one request: a frame made of in-memory bytes and file regions.

Most responses are one ``bytes`` part (header and body, encoded by kio). A Fetch response is the
response's own bytes with the record batches of each partition left out, and those batches as
regions of segment files, which the writer hands to the socket with sendfile: the bytes on disk
are the bytes on the wire, and no Python code copies them.

A region is anything shaped like ``strom.storage.file_region.FileRegion``: a private descriptor
(``fileno()``), ``position`` and ``length``, and ``close()``. A ``Response`` owns its regions: the
connection closes them once the response is written, or dropped (connection gone).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol, TypeAlias, runtime_checkable

__all__ = ["Buffer", "FileRegionLike", "Part", "Response"]

Buffer: TypeAlias = bytes | bytearray | memoryview


@runtime_checkable
class FileRegionLike(Protocol):
    """``length`` bytes from ``position`` of the file open as ``fileno()``.

    Sent with positional calls only (``os.sendfile``/``os.pread`` with an offset); the
    descriptor's own position is never used or moved. A file shorter than the region makes the
    connection close: the frame's size has already been written.
    """

    @property
    def position(self) -> int: ...

    @property
    def length(self) -> int: ...

    def fileno(self) -> int: ...

    def close(self) -> None: ...


Part: TypeAlias = Buffer | FileRegionLike


@dataclass(frozen=True, slots=True)
class Response:
    """One response frame's payload (the size prefix is added when it is written)."""

    parts: tuple[Part, ...]

    @classmethod
    def of(cls, *parts: Part) -> Response:
        return cls(tuple(parts))

    @classmethod
    def from_parts(cls, parts: Iterable[Part]) -> Response:
        return cls(tuple(parts))

    @property
    def size(self) -> int:
        """The frame size: every part's length."""
        return sum(
            memoryview(part).nbytes if isinstance(part, Buffer) else part.length
            for part in self.parts
        )

    @property
    def regions(self) -> tuple[FileRegionLike, ...]:
        return tuple(part for part in self.parts if not isinstance(part, Buffer))

    def close(self) -> None:
        """Close every file region (idempotent)."""
        for region in self.regions:
            with contextlib.suppress(OSError):
                region.close()
