"""A byte range of a segment file that the network layer sends with sendfile.

Ownership rule: **every FileRegion owns a file descriptor of its own** (``os.dup`` of the
segment's), and whoever receives one must close it once the bytes are sent (``close()``, or
use it as a context manager; a region that is garbage-collected open closes itself as a last
resort). Nothing the log does afterwards touches that descriptor:

* retention, truncation of whole segments, compaction's swap and ``close()`` only close the
  segment's own descriptor and unlink its files; on Linux (and every POSIX system) an open
  descriptor keeps the inode and its data readable until the last descriptor is closed, so a
  region being sent when its segment is deleted still sends the bytes it promised;
* truncating *inside* a segment (replication's ``truncate_to``) shrinks the file itself: a
  sendfile past the new end returns 0. A sender that gets 0 before ``length`` bytes must treat
  the response as failed and close the connection (its size was already written). Kafka has
  the same case and handles it the same way.

A region also never sees bytes appended after it was made: ``length`` is fixed.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from types import TracebackType


class FileRegion:
    """``length`` bytes at ``position`` of the file at ``path``, through a private descriptor."""

    __slots__ = ("_fd", "length", "path", "position")

    def __init__(self, *, fd: int, path: Path, position: int, length: int) -> None:
        self._fd = fd
        self.path = path
        self.position = position
        self.length = length

    @classmethod
    def dup(cls, fd: int, *, path: Path, position: int, length: int) -> FileRegion:
        """A region over a new descriptor duplicated from ``fd`` (which stays the caller's)."""
        return cls(fd=os.dup(fd), path=path, position=position, length=length)

    @property
    def closed(self) -> bool:
        return self._fd < 0

    def fileno(self) -> int:
        """The region's descriptor, for ``socket.sendfile``/``os.sendfile`` with ``position``."""
        if self._fd < 0:
            raise ValueError("FileRegion is closed")
        return self._fd

    def read(self) -> bytes:
        """The region's bytes (the in-memory path; fewer if the file was truncated since)."""
        fd = self.fileno()
        parts: list[bytes] = []
        done = 0
        while done < self.length:
            chunk = os.pread(fd, self.length - done, self.position + done)
            if not chunk:
                break
            parts.append(chunk)
            done += len(chunk)
        return b"".join(parts)

    def close(self) -> None:
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)

    def __enter__(self) -> FileRegion:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_fd", -1) >= 0:
            with contextlib.suppress(OSError):
                self.close()

    def __repr__(self) -> str:
        state = "closed" if self._fd < 0 else f"fd={self._fd}"
        return (
            f"FileRegion({self.path.name}, position={self.position}, length={self.length}, {state})"
        )
