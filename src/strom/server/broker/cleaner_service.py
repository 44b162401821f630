"""The log cleaner in the background: compaction of ``cleanup.policy=compact`` logs.

Every ``log.cleaner.backoff.ms`` (at once again after a pass that rewrote segments, as Kafka's
cleaner thread does) the filthiest compacted log that needs cleaning is chosen on the event
loop, which owns every :class:`~strom.storage.partition_log.PartitionLog`, and its pass runs in a
worker thread (``asyncio.to_thread``). There the pass only reads segments; each swap and
checkpoint update comes back to the event loop (the cleaner's ``run_on_owner``) and first checks
that the log is still open and holds every segment the pass read. So appends, reads, retention,
DeleteRecords and topic deletion never wait for a pass and never see a log half-swapped; when
one of them removed a segment the pass needed, the pass is dropped and the next one starts over.
``storage/NOTES.md`` ("Compaction") has the rule.

Which logs and when is :class:`~strom.storage.cleaner.LogCleaner`'s business: the topic
settings ``min.cleanable.dirty.ratio``, ``min.compaction.lag.ms``, ``max.compaction.lag.ms``
and ``delete.retention.ms`` (server defaults ``log.cleaner.*``), through each log's config.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping

from strom.common import Clock, TopicPartition
from strom.storage.cleaner import CleaningAborted, CleanStats, LogCleaner
from strom.storage.partition_log import PartitionLog

__all__ = ["CleanerService"]

log = logging.getLogger(__name__)


class CleanerService:
    """Runs a :class:`LogCleaner` over the broker's compacted logs, one pass at a time.

    Build it before the logs are loaded (the log manager calls :meth:`forget` on deletion);
    :meth:`start` begins the periodic passes, :meth:`stop` waits for the one in flight.
    """

    def __init__(self, *, clock: Clock) -> None:
        self._clock = clock
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping = False
        self._task: asyncio.Task[None] | None = None
        self._in_flight: asyncio.Future[CleanStats | None] | None = None
        self.cleaner = LogCleaner(run_on_owner=self._on_loop)

    def forget(self, partition_log: PartitionLog) -> None:
        """The log is being deleted: drop its cleaner checkpoint (a pass on it aborts)."""
        self.cleaner.forget(partition_log)

    def start(
        self,
        *,
        backoff_ms: int,
        logs: Callable[[], Mapping[TopicPartition, PartitionLog]],
        high_watermarks: Callable[[], Mapping[TopicPartition, int]],
    ) -> None:
        """Clean every ``backoff_ms`` the logs ``logs()`` gives that have a high watermark."""
        self._loop = asyncio.get_running_loop()
        self._task = self._loop.create_task(
            self._run(backoff_ms, logs, high_watermarks), name="strom-log-cleaner"
        )

    async def _run(
        self,
        backoff_ms: int,
        logs: Callable[[], Mapping[TopicPartition, PartitionLog]],
        high_watermarks: Callable[[], Mapping[TopicPartition, int]],
    ) -> None:
        while True:
            try:
                cleaned = await self.clean_filthiest(logs(), high_watermarks())
            except Exception:
                log.exception("log cleaner failed")
                cleaned = None
            if cleaned is None or not cleaned.segments_written:
                await asyncio.sleep(backoff_ms / 1000)

    async def clean_filthiest(
        self,
        logs: Mapping[TopicPartition, PartitionLog],
        high_watermarks: Mapping[TopicPartition, int],
    ) -> CleanStats | None:
        """Clean the filthiest log that needs it, off the event loop; None when none did (or
        the pass was aborted or failed)."""
        now_ms = self._clock.now_ms()
        chosen = self.cleaner.filthiest_logs(logs, now_ms=now_ms, high_watermarks=high_watermarks)
        if not chosen or self._stopping:
            return None
        self._in_flight = asyncio.ensure_future(
            asyncio.to_thread(self.cleaner.clean_chosen, chosen[0], now_ms=now_ms)
        )
        try:
            # Shielded: cancelling the periodic task must not leave the worker thread running
            # unseen; stop() waits for it.
            return await asyncio.shield(self._in_flight)
        finally:
            self._in_flight = None

    def _on_loop(self, step: Callable[[], None]) -> None:
        """Run ``step`` on the event loop and wait (called from the worker thread)."""
        loop = self._loop
        if loop is None:
            raise RuntimeError("the cleaner service is not started")

        async def run() -> None:
            if self._stopping:
                raise CleaningAborted("the broker is stopping")
            step()

        asyncio.run_coroutine_threadsafe(run(), loop).result()

    async def stop(self) -> None:
        """Stop the passes; a pass in flight stops at its next step and is awaited."""
        self._stopping = True
        in_flight = self._in_flight
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if in_flight is not None:
            await asyncio.gather(in_flight, return_exceptions=True)
