"""What the group and the transaction coordinators' I/O shells share (Kafka's
``CoordinatorRuntime``, in small).

A coordinator keeps its state in the partitions of one internal topic:

* the topic is created on the first FindCoordinator that needs it
  (:meth:`CoordinatorRuntime.ensure_topic`, through the controller, as ``AutoTopicCreator``
  does it); once it exists, at start or when the metadata shows it
  (:meth:`CoordinatorRuntime.on_metadata`), every batch of every partition this broker leads
  goes to the subclass's :meth:`~CoordinatorRuntime._replay_batch`: this broker coordinates
  the keys of those partitions, and answers NOT_COORDINATOR for the others; afterwards each
  metadata change loads the partitions this broker has come to lead and unloads those it lost;
* the core's records become one batch appended to a partition with acks=all
  (:meth:`CoordinatorRuntime._append`), and the core hears the outcome once the high watermark
  passes the batch (every in-sync replica has it: Kafka's deferred event queue), or the ISR
  shrank below ``min.insync.replicas`` meanwhile, or leadership moved, or ``write_timeout_ms``
  passed; with one replica that is at once. The wait is the replica manager's acks=all wait
  (``ReplicaManager.when_acknowledged``: a ``DelayedProduce`` in its produce purgatory), as
  a producer's;
* the core's timers are driven by one asyncio task that sleeps until the core's
  ``next_deadline`` or until :meth:`CoordinatorRuntime.wake` (after every request) says it may
  have changed.
"""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol, TypeVar

from strom.common import Clock, ErrorCode, TopicPartition
from strom.common.waiting import wait_event
from strom.metadata import MetadataDelta, MetadataImage
from strom.protocol.batch import HEADER_SIZE, NO_PRODUCER_ID, BatchHeader
from strom.protocol.records import Record, build_batch
from strom.server.auto_topics import AutoTopicCreator
from strom.server.replica_manager import ReplicaManager
from strom.storage.producer_state import AppendOrigin

__all__ = ["CoordinatorCore", "CoordinatorRuntime"]

log = logging.getLogger(__name__)

T = TypeVar("T")

_READ_CHUNK = 1 << 20

KeyValue = tuple[bytes | None, bytes | None]


class CoordinatorCore(Protocol):
    """What the runtime asks of a sans-I/O coordinator core."""

    @property
    def partition_count(self) -> int | None: ...

    @property
    def owned_partitions(self) -> frozenset[int]: ...

    def begin_loading_partition(self, partition: int) -> None: ...

    def unload_partition(self, partition: int) -> object: ...

    def next_deadline(self) -> int | None: ...

    def poll(self, now_ms: int) -> None: ...


class CoordinatorRuntime(ABC):
    """The I/O shell around one coordinator core and its internal ``topic``."""

    def __init__(
        self,
        *,
        topic: str,
        replica_manager: ReplicaManager,
        auto_topics: AutoTopicCreator,
        clock: Clock,
        write_timeout_ms: int,
    ) -> None:
        self.topic = topic
        self._replica_manager = replica_manager
        self._write_timeout_ms = write_timeout_ms
        self._auto_topics = auto_topics
        self._clock = clock
        self._create_lock = asyncio.Lock()
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    @abstractmethod
    def core(self) -> CoordinatorCore: ...

    def now_ms(self) -> int:
        return self._clock.now_ms()

    # --- loading ------------------------------------------------------------------------------

    @abstractmethod
    def _begin_loading(self, partitions: int, owned: frozenset[int]) -> None: ...

    @abstractmethod
    def _replay_batch(self, partition: int, header: BatchHeader, batch: bytes) -> int:
        """Apply one batch of ``partition`` to the core; the number of records it applied."""

    @abstractmethod
    def _finish_loading(self, partition: int) -> None: ...

    @abstractmethod
    def _loaded(self, records: int) -> None:
        """Log what loading found."""

    def _load(self, partitions: int) -> None:
        """Replay the partitions this broker leads; it coordinates their keys."""
        owned = frozenset(p for p in range(partitions) if self._leads(p))
        self._begin_loading(partitions, owned)
        self._loaded(sum(self._replay(partition) for partition in sorted(owned)))

    def _replay(self, partition: int) -> int:
        loaded = 0
        for header, batch in self._batches(TopicPartition(self.topic, partition)):
            loaded += self._replay_batch(partition, header, batch)
        self._finish_loading(partition)
        return loaded

    def _follow_leadership(self, partitions: int) -> bool:
        """Load the partitions this broker has come to lead, unload those it no longer leads
        (Kafka's coordinator ``onElection`` / ``onResignation``); whether any changed."""
        owned = self.core.owned_partitions
        led = frozenset(p for p in range(partitions) if self._leads(p))
        for partition in sorted(owned - led):
            self.core.unload_partition(partition)
            log.info(
                "%s-%d is led elsewhere now: its keys are no longer coordinated here",
                self.topic,
                partition,
            )
        for partition in sorted(led - owned):
            self.core.begin_loading_partition(partition)
            loaded = self._replay(partition)
            log.info("leads %s-%d now: loaded %d record(s)", self.topic, partition, loaded)
        return led != owned

    def _leads(self, partition: int) -> bool:
        tp = TopicPartition(self.topic, partition)
        registration = self._replica_manager.image.topics.get_partition(tp)
        return registration is not None and registration.leader == self._replica_manager.node_id

    def _batches(self, tp: TopicPartition) -> Iterator[tuple[BatchHeader, bytes]]:
        """Every whole batch of the partition's log, oldest first."""
        partition_log = self._replica_manager.log_manager.get(tp)
        if partition_log is None:
            return
        offset = partition_log.log_start_offset
        while offset < partition_log.log_end_offset:
            data = partition_log.read_bytes(offset, max_bytes=_READ_CHUNK)
            position = 0
            while position + HEADER_SIZE <= len(data):
                header = BatchHeader.read(data, position)
                if position + header.size > len(data):
                    break
                yield header, data[position : position + header.size]
                position += header.size
                offset = header.base_offset + header.last_offset_delta + 1
            if position == 0:
                return

    # --- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        """Load an existing topic and start the timer task."""
        self.on_metadata(None, self._replica_manager.image)
        self._task = asyncio.get_running_loop().create_task(
            self._drive(), name=f"strom-{self.topic}"
        )

    def on_metadata(self, delta: MetadataDelta | None, image: MetadataImage) -> None:
        """A metadata publisher: load the topic once it exists, whichever broker created it,
        then follow its partitions' leadership."""
        topic = image.topics.get_topic(self.topic)
        if topic is None:
            return
        if self.core.partition_count is None:
            self._load(len(topic.partitions))
            self.wake()
        elif self._follow_leadership(len(topic.partitions)):
            self.wake()

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def ensure_topic(self) -> ErrorCode:
        """Create the topic if it does not exist yet and load it; NONE once it does."""
        if self.core.partition_count is not None:
            return ErrorCode.none
        async with self._create_lock:
            if self.core.partition_count is not None:  # type: ignore[redundant-expr,unused-ignore]
                return ErrorCode.none  # type: ignore[unreachable,unused-ignore]
            if self._replica_manager.image.topics.get_topic(self.topic) is None:
                outcome = await self._auto_topics.create([self.topic])
                error = outcome.get(self.topic)
                if (
                    error is not None
                    and error.is_failure
                    and error.code != ErrorCode.topic_already_exists
                ):
                    return ErrorCode.coordinator_not_available
            topic = self._replica_manager.image.topics.get_topic(self.topic)
            if topic is None:
                return ErrorCode.coordinator_not_available
            self._load(len(topic.partitions))
            self.wake()
            return ErrorCode.none

    # --- requests and timers ------------------------------------------------------------------

    async def call(self, operation: Callable[[Callable[[T], None]], None]) -> T:
        """Run ``operation(reply)`` on the core and wait for its reply."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()

        def reply(response: T) -> None:
            if not future.done():
                future.set_result(response)

        operation(reply)
        self.wake()
        return await future

    def wake(self) -> None:
        """The core's deadlines may have changed."""
        self._changed.set()

    async def _drive(self) -> None:
        while True:
            deadline = self.core.next_deadline()
            timeout = None if deadline is None else max(deadline - self.now_ms(), 0) / 1000
            await wait_event(self._changed, timeout)
            self._changed.clear()
            try:
                self.core.poll(self.now_ms())
            except Exception:
                log.exception("the %s coordinator's timers failed", self.topic)

    # --- writing ------------------------------------------------------------------------------

    def _append(
        self,
        partition: int,
        records: Sequence[KeyValue],
        done: Callable[[ErrorCode], None],
        *,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = -1,
    ) -> None:
        """Append ``records`` as one batch (transactional when a producer id is given: the
        producer's id and epoch, base sequence 0, as Kafka's coordinators write them); ``done``
        hears NONE once the batch is committed, else the partition's error (see the module
        doc)."""
        tp = TopicPartition(self.topic, partition)
        now = self.now_ms()
        transactional = producer_id != NO_PRODUCER_ID
        batch = build_batch(
            [
                Record(offset=index, timestamp=now, key=key, value=value)
                for index, (key, value) in enumerate(records)
            ],
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=0 if transactional else -1,
            is_transactional=transactional,
        )
        [(_, result)] = self._replica_manager.append_to_local_log(
            [(tp, batch)],
            required_acks=-1,
            internal_topics_allowed=True,
            origin=AppendOrigin.COORDINATOR,
        )
        if result.error is not ErrorCode.none:
            log.warning("cannot append to %s: %s", tp, result.message or result.error.name)
            done(result.error)
            return
        self._replica_manager.when_acknowledged(
            {tp: result.last_offset + 1},
            timeout_ms=self._write_timeout_ms,
            callback=lambda outcomes: done(outcomes[tp]),
        )

    async def _committed(self, tp: TopicPartition, offset: int) -> ErrorCode:
        """The acks=all outcome of a write (of this broker) ending before ``offset``."""
        outcomes = await self._replica_manager.wait_for_acks(
            {tp: offset}, timeout_ms=self._write_timeout_ms
        )
        return outcomes[tp]
