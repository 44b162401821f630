"""The quorum's small writes off the event loop: the ``quorum-state`` file and snapshots.

The Raft core calls its ``QuorumStateStore`` and ``RaftLog`` synchronously; fsyncing there would
stall the event loop (and with it the Raft timers, heartbeats and every request) for as long as
the disk takes. Instead:

* a :class:`DiskWriter` runs writes in order on one worker thread of its own, and tells the event
  loop when each is done;
* :class:`BackgroundQuorumStateStore` keeps the new election state in memory at once (``read``
  answers it) and writes the file on its writer; the
  :class:`~strom.server.raft.raft_manager.RaftManager`
  holds every request and answer the core emits until the writes before it are durable
  (:meth:`DiskWriter.when_written`), so a vote is on disk before it is cast or granted;
* :class:`~strom.server.raft.raft_log.FileRaftLog` writes snapshots on its writer and trims the log
  only once the snapshot is durable.

A write that fails stops the writer: nothing held behind it is released (the node stops
speaking in the quorum, rather than answering with a vote it may forget), and the error is
logged once.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections.abc import Callable
from pathlib import Path

from strom.raft import ElectionState, FileQuorumStateStore

__all__ = ["BackgroundQuorumStateStore", "DiskWriter"]

log = logging.getLogger(__name__)


class DiskWriter:
    """Writes run one after another on a worker thread; completions come back on the loop."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix=name)
        self._loop = asyncio.get_running_loop()
        self._pending = 0
        self._waiting: list[Callable[[], None]] = []
        self.failed: BaseException | None = None
        """The error of the write that stopped the writer, if one did."""

    @property
    def pending(self) -> int:
        """Writes submitted and not yet done."""
        return self._pending

    def submit(
        self, job: Callable[[], None], done: Callable[[], None] | None = None
    ) -> concurrent.futures.Future[None]:
        """Run ``job`` after every write submitted before it; then ``done`` on the loop (not
        when the job, or an earlier one, failed)."""
        self._pending += 1
        future = self._executor.submit(job)
        future.add_done_callback(
            lambda finished: self._loop.call_soon_threadsafe(self._finished, finished, done)
        )
        return future

    def _finished(
        self, future: concurrent.futures.Future[None], done: Callable[[], None] | None
    ) -> None:
        self._pending -= 1
        error = future.exception()
        if error is not None and self.failed is None:
            self.failed = error
            log.critical(
                "%s: a durable write failed, holding everything after it: %s", self.name, error
            )
        if self.failed is not None:
            return
        if done is not None:
            done()
        if self._pending == 0:
            waiting, self._waiting = self._waiting, []
            for action in waiting:
                action()

    def when_written(self, action: Callable[[], None]) -> None:
        """Run ``action`` once every write submitted so far is durable (at once when none is
        pending; never after a failed write)."""
        if self.failed is not None:
            return
        if self._pending == 0:
            action()
        else:
            self._waiting.append(action)

    async def close(self) -> None:
        """Wait for the writes submitted so far, then stop the thread."""
        await asyncio.get_running_loop().run_in_executor(None, self._executor.shutdown, True)


class BackgroundQuorumStateStore:
    """The ``quorum-state`` file (:class:`FileQuorumStateStore`), written on ``writer``."""

    def __init__(self, path: Path, writer: DiskWriter) -> None:
        self._file = FileQuorumStateStore(path)
        self._writer = writer
        self._latest: ElectionState | None = None

    def read(self) -> ElectionState | None:
        return self._latest if self._latest is not None else self._file.read()

    def write(self, state: ElectionState, voters: frozenset[int]) -> None:
        """Durable once ``writer.when_written`` runs what was held behind it."""
        self._latest = state
        self._writer.submit(lambda: self._file.write(state, voters))
