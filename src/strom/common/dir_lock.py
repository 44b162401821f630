"""One process per directory: an exclusive ``flock`` on ``<dir>/.lock``, as Kafka's ``FileLock``
on each log directory and the metadata directory.

The lock is taken without waiting and held until :meth:`DirectoryLock.release` (or the process
ends: the kernel drops it with the descriptor, so a killed process never leaves a stale lock).
The holder writes its PID into the file, so a refused process can name it. ``flock`` locks
belong to an open file description: a second lock on the same directory from the same process
is refused too, as Kafka refuses another thread.
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path
from typing import Final

__all__ = ["LOCK_FILE", "DirectoryInUseError", "DirectoryLock"]

LOCK_FILE: Final = ".lock"


class DirectoryInUseError(RuntimeError):
    """Another process (or another owner in this one) holds the directory's lock."""


class DirectoryLock:
    """The held lock of one directory (see the module doc)."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, directory: Path, *, what: str = "directory") -> DirectoryLock:
        """Lock ``directory`` (created if missing) or raise :class:`DirectoryInUseError`, whose
        one-line message names ``what``, the directory and the holder's PID when known."""
        directory.mkdir(parents=True, exist_ok=True)
        path = directory / LOCK_FILE
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            os.close(fd)
            if error.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            holder = _holder(path)
            by = f"process {holder}" if holder is not None else "another process"
            raise DirectoryInUseError(
                f"{what} {directory} is in use by {by} (it holds {path}): stop that process, "
                "or give this one another directory"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return cls(path, fd)

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Give the directory up (idempotent). The file stays, as Kafka's does."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)  # closing the only descriptor releases the flock


def _holder(path: Path) -> int | None:
    """The PID a holder wrote into the lock file, if any."""
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None
