"""What the group and the transaction coordinators' I/O shells share (Kafka's
``CoordinatorRuntime``, in small).

A coordinator keeps its state in the partitions of one internal topic:

* the topic is created (:meth:`CoordinatorRuntime.ensure_topic`, through the controller, as
  ``AutoTopicCreator`` does it) on the first FindCoordinator that needs it, or on the first
  request a client may send its coordinator without one (InitProducerId, JoinGroup,
  OffsetCommit, OffsetFetch), which would otherwise be answered NOT_COORDINATOR until some
  client sent a FindCoordinator; once the metadata shows it
  (:meth:`CoordinatorRuntime.on_metadata`, a metadata publisher), this broker coordinates the
  keys of the partitions it leads, and answers NOT_COORDINATOR for the others;
* loading follows (partition, leader epoch), as Kafka's ``onElection`` / ``onResignation``: a
  partition led here at a new epoch is unloaded and loaded again, even when the metadata
  change that shows it skipped the steps between. A load does not run in the publisher: it is
  scheduled, and one task per coordinator replays the scheduled partitions' batches
  (:meth:`~CoordinatorRuntime._replay_batch`) a chunk at a time, yielding to the event loop
  between chunks, so the Raft poll and the heartbeats on the same loop go on. Requests for a
  loading partition are answered COORDINATOR_LOAD_IN_PROGRESS; a load whose epoch is gone
  before it ends is abandoned;
* the core's records become one batch appended to a partition with acks=all
  (:meth:`CoordinatorRuntime.append`), and the core hears the outcome once the high watermark
  passes the batch (every in-sync replica has it: Kafka's deferred event queue), or the ISR
  shrank below ``min.insync.replicas`` meanwhile, or leadership moved, or ``write_timeout_ms``
  passed; with one replica that is at once. The wait is the replica manager's acks=all wait
  (``ReplicaManager.when_acknowledged``: a ``DelayedProduce`` in its produce purgatory), as
  a producer's. An outcome from the purgatory reaches the core on the loop's next turn, not
  inside the high watermark advance that decided it: that advance runs inside a follower's
  fetch, between its read and its long poll, and a write the core made there in answer (the
  Complete record after a transaction's markers) would land where that fetch had just read
  nothing, and wake nobody until ``replica.fetch.wait.max.ms`` (500 ms) ran out;
* the core's timers are driven by one asyncio task that sleeps until the core's
  ``next_deadline`` or until :meth:`CoordinatorRuntime.wake` (after every request) says it may
  have changed. It sleeps on a Timer (the event loop's, or a simulation's virtual time, as the
  replica manager's purgatories and fetchers do), and the runtime reads time only from its
  Clock.
"""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from typing import Generic, Protocol, TypeVar

from strom.common import Clock, ErrorCode, TopicPartition
from strom.common.timer import LoopTimer, Timer, Wakeup
from strom.metadata import MetadataDelta, MetadataImage
from strom.protocol.batch import HEADER_SIZE, NO_PRODUCER_ID, BatchHeader
from strom.protocol.records import Record, build_batch, iter_records
from strom.protocol.schema import SchemaError
from strom.server.channel.auto_topics import AutoTopicCreator
from strom.server.replica.delayed_produce import AcksCallback
from strom.server.replica.replica_results import AppendResult
from strom.storage.log_manager import LogManager
from strom.storage.producer_state import AppendOrigin

__all__ = ["CoordinatorCore", "CoordinatorReplicas", "CoordinatorRuntime", "InternalTopicRecord"]

log = logging.getLogger(__name__)

T = TypeVar("T")

KeyValue = tuple[bytes | None, bytes | None]


class CoordinatorCore(Protocol):
    """What the runtime asks of a sans-I/O coordinator core."""

    @property
    def partition_count(self) -> int | None: ...

    def begin_loading(self, partitions: int, owned: Collection[int] | None = None) -> None: ...

    def begin_loading_partition(self, partition: int) -> None: ...

    def unload_partition(self, partition: int) -> object: ...

    def next_deadline(self) -> int | None: ...

    def poll(self, now_ms: int) -> None: ...


class InternalTopicRecord(Protocol):
    """A record of a coordinator's internal topic, as its core writes and replays it."""

    def encode(self) -> KeyValue:
        """The record's key and value (None: a tombstone)."""
        ...


CoreT = TypeVar("CoreT", bound=CoordinatorCore)
RecordT = TypeVar("RecordT", bound=InternalTopicRecord)


class CoordinatorReplicas(Protocol):
    """What a coordinator runtime needs of the replica manager: its internal topic's logs and
    image, and acks=all appends to them."""

    @property
    def node_id(self) -> int: ...

    @property
    def log_manager(self) -> LogManager: ...

    @property
    def image(self) -> MetadataImage: ...

    def append_to_local_log(
        self,
        entries: Iterable[tuple[TopicPartition, bytes | None]],
        *,
        required_acks: int,
        internal_topics_allowed: bool = False,
        origin: AppendOrigin = AppendOrigin.CLIENT,
    ) -> list[tuple[TopicPartition, AppendResult]]: ...

    def when_acknowledged(
        self,
        required_offsets: Mapping[TopicPartition, int],
        *,
        timeout_ms: int,
        callback: AcksCallback,
    ) -> None: ...

    async def wait_for_acks(
        self, required_offsets: Mapping[TopicPartition, int], *, timeout_ms: int
    ) -> dict[TopicPartition, ErrorCode]: ...


class CoordinatorRuntime(ABC, Generic[CoreT, RecordT]):
    """The I/O shell around one coordinator core and its internal ``topic``, whose records
    the core writes and replays as ``RecordT``; the core's writer (:meth:`append`)."""

    coordinator: CoreT
    """The core, which a subclass makes with itself as its writer."""

    load_chunk_bytes = 64 << 10
    """How much of a partition's log one step of a load reads and replays."""

    def __init__(
        self,
        *,
        topic: str,
        replica_manager: CoordinatorReplicas,
        auto_topics: AutoTopicCreator,
        clock: Clock,
        write_timeout_ms: int,
        timer: Timer | None = None,
    ) -> None:
        """``timer``: what the core's timer task sleeps on (the event loop's by default)."""
        self.topic = topic
        self._replica_manager = replica_manager
        self._write_timeout_ms = write_timeout_ms
        self._auto_topics = auto_topics
        self._clock = clock
        self._create_lock = asyncio.Lock()
        self._changed = Wakeup(timer or LoopTimer())
        self._task: asyncio.Task[None] | None = None
        self._epochs: dict[int, int] = {}
        """Partition -> the leader epoch it is loading or loaded at (coordinated here)."""
        self._to_load: deque[tuple[int, int]] = deque()
        self._loads_pending = asyncio.Event()
        self._idle = asyncio.Event()
        self._loader: asyncio.Task[None] | None = None
        self._stopped = False

    @property
    def core(self) -> CoreT:
        return self.coordinator

    def now_ms(self) -> int:
        return self._clock.now_ms()

    # --- loading (Kafka's onElection / onResignation, by leader epoch) -----------------------

    @staticmethod
    @abstractmethod
    def _decode(key: bytes, value: bytes | None) -> RecordT | None:
        """A record read back; None for one to skip quietly (SchemaError: unreadable)."""

    @abstractmethod
    def _replay(self, header: BatchHeader, record: RecordT) -> None:
        """Apply ``record`` of the data batch ``header`` to the core."""

    @abstractmethod
    def _replay_control(self, partition: int, header: BatchHeader, batch: bytes) -> None:
        """Apply a control batch (transaction markers) of ``partition`` to the core."""

    def _replay_batch(self, partition: int, header: BatchHeader, batch: bytes) -> int:
        """Apply one batch of ``partition`` to the core; the number of records it applied (an
        unreadable one is logged and skipped, as Kafka's loaders do)."""
        if header.is_control:
            self._replay_control(partition, header, batch)
            return 0
        count = 0
        for record in iter_records(batch):
            if record.key is None:
                continue
            try:
                decoded = self._decode(record.key, record.value)
            except SchemaError as error:
                log.warning("skipping an unreadable record of %s: %s", self.topic, error)
                continue
            if decoded is not None:
                self._replay(header, decoded)
                count += 1
        return count

    @abstractmethod
    def _finish_loading(self, partition: int, leader_epoch: int) -> None:
        """``partition`` is replayed (loaded as leader at ``leader_epoch``): it serves now."""

    def _follow_leadership(self, image: MetadataImage, partitions: int) -> bool:
        """Unload every partition whose leader epoch here is gone (led elsewhere now, or led here
        at a newer epoch), then schedule a load of each partition led here at an epoch not loaded
        yet; whether anything changed. A coalesced change (a snapshot) that skipped an
        unload and a reload still shows the new epoch, so it reloads."""
        led = self._led(image, partitions)
        changed = False
        for partition, epoch in sorted(self._epochs.items()):
            if led.get(partition) != epoch:
                del self._epochs[partition]
                self.core.unload_partition(partition)
                changed = True
                log.info(
                    "%s-%d: resigned as coordinator of leader epoch %d",
                    self.topic,
                    partition,
                    epoch,
                )
        for partition, epoch in sorted(led.items()):
            if partition not in self._epochs:
                self._epochs[partition] = epoch
                self.core.begin_loading_partition(partition)
                self._to_load.append((partition, epoch))
                changed = True
        if self._to_load:
            self._idle.clear()
            self._loads_pending.set()
            self._ensure_loader()
        return changed

    def _led(self, image: MetadataImage, partitions: int) -> dict[int, int]:
        """Partition -> leader epoch, of the topic's partitions this broker leads."""
        node_id = self._replica_manager.node_id
        led: dict[int, int] = {}
        for partition in range(partitions):
            registration = image.topics.get_partition(TopicPartition(self.topic, partition))
            if registration is not None and registration.leader == node_id:
                led[partition] = registration.leader_epoch
        return led

    def _ensure_loader(self) -> None:
        if self._loader is None:
            self._loader = asyncio.get_running_loop().create_task(
                self._load_scheduled(), name=f"strom-{self.topic}-loader"
            )

    async def _load_scheduled(self) -> None:
        """Load the scheduled partitions one after another, off the metadata publisher."""
        while True:
            while self._to_load:
                partition, epoch = self._to_load.popleft()
                try:
                    await self._load(partition, epoch)
                except Exception:
                    log.exception("loading %s-%d failed", self.topic, partition)
            self._loads_pending.clear()
            self._idle.set()
            await self._loads_pending.wait()
            self._idle.clear()

    async def _load(self, partition: int, epoch: int) -> None:
        """Replay ``partition`` in chunks, yielding to the event loop after each; abandoned as
        soon as this broker no longer coordinates it at ``epoch`` (the unload dropped what was
        replayed)."""
        started = self._clock.monotonic_ms()
        tp = TopicPartition(self.topic, partition)
        loaded = 0
        for chunk in self._chunks(tp):
            if self._epochs.get(partition) != epoch:
                return
            for header, batch in chunk:
                loaded += self._replay_batch(partition, header, batch)
            await asyncio.sleep(0)
        if self._epochs.get(partition) != epoch:
            return
        self._finish_loading(partition, epoch)
        self.wake()
        log.info(
            "%s-%d loaded as coordinator of leader epoch %d: %d record(s) in %d ms",
            self.topic,
            partition,
            epoch,
            loaded,
            self._clock.monotonic_ms() - started,
        )

    def _chunks(self, tp: TopicPartition) -> Iterator[list[tuple[BatchHeader, bytes]]]:
        """The whole batches of the partition's log, oldest first, one read at a time (the log
        end is read anew before each, so batches appended while loading are replayed too)."""
        partition_log = self._replica_manager.log_manager.get(tp)
        if partition_log is None:
            return
        offset = partition_log.log_start_offset
        while offset < partition_log.log_end_offset:
            data = partition_log.read_bytes(offset, max_bytes=self.load_chunk_bytes)
            chunk: list[tuple[BatchHeader, bytes]] = []
            position = 0
            while position + HEADER_SIZE <= len(data):
                header = BatchHeader.read(data, position)
                if position + header.size > len(data):
                    break
                chunk.append((header, data[position : position + header.size]))
                position += header.size
                offset = header.base_offset + header.last_offset_delta + 1
            if not chunk:
                return
            yield chunk

    async def wait_loaded(self) -> None:
        """Until every scheduled load has finished or been abandoned."""
        if self._loader is not None:
            await self._idle.wait()

    # --- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        """Start the timer task; the broker then installs :meth:`on_metadata` as a publisher,
        which schedules the loads."""
        self._task = asyncio.get_running_loop().create_task(
            self._drive(), name=f"strom-{self.topic}"
        )

    def on_metadata(self, delta: MetadataDelta | None, image: MetadataImage) -> None:
        """A metadata publisher: once the topic exists, whichever broker created it, follow its
        partitions' leadership (the loads run in a task of their own)."""
        topic = image.topics.get_topic(self.topic)
        if topic is None or self._stopped:
            return
        if self.core.partition_count is None:
            self.core.begin_loading(len(topic.partitions), frozenset())
        if self._follow_leadership(image, len(topic.partitions)):
            self.wake()

    async def stop(self) -> None:
        self._stopped = True
        tasks = [task for task in (self._task, self._loader) if task is not None]
        self._task = self._loader = None
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def ensure_topic(self) -> ErrorCode:
        """Create the topic if it does not exist yet; NONE once it does (its partitions led here
        are then loading: the core answers COORDINATOR_LOAD_IN_PROGRESS until they are loaded),
        COORDINATOR_NOT_AVAILABLE when it could not be created (the core then still answers
        NOT_COORDINATOR: both are retriable)."""
        if self.core.partition_count is not None:
            return ErrorCode.none
        async with self._create_lock:
            if self._replica_manager.image.topics.get_topic(self.topic) is None:
                outcome = await self._auto_topics.create([self.topic])
                error = outcome.get(self.topic)
                if (
                    error is not None
                    and error.is_failure
                    and error.code != ErrorCode.topic_already_exists
                ):
                    return ErrorCode.coordinator_not_available
            image = self._replica_manager.image
            if image.topics.get_topic(self.topic) is None:
                return ErrorCode.coordinator_not_available
            self.on_metadata(None, image)
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
        self._changed.wake()

    async def _drive(self) -> None:
        while True:
            deadline = self.core.next_deadline()
            timeout_ms = None if deadline is None else max(deadline - self.now_ms(), 0)
            await self._changed.wait(timeout_ms)
            try:
                self.core.poll(self.now_ms())
            except Exception:
                log.exception("the %s coordinator's timers failed", self.topic)

    # --- writing ------------------------------------------------------------------------------

    @staticmethod
    @abstractmethod
    def _append_error(code: ErrorCode) -> ErrorCode:
        """What the coordinator answers for an append that failed with ``code``."""

    def append(
        self,
        partition: int,
        records: Sequence[RecordT],
        done: Callable[[ErrorCode], None],
        *,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = -1,
    ) -> None:
        """The core's writer: append ``records`` as one batch (transactional when a producer id
        is given: the producer's id and epoch, base sequence 0, as Kafka's coordinators write
        them); ``done`` hears NONE once the batch is committed, else the coordinator's error
        (:meth:`_append_error`) for the partition's (see the module doc)."""
        tp = TopicPartition(self.topic, partition)
        now = self.now_ms()
        transactional = producer_id != NO_PRODUCER_ID
        batch = build_batch(
            [
                Record(offset=index, timestamp=now, key=key, value=value)
                for index, (key, value) in enumerate(record.encode() for record in records)
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
            done(self._append_error(result.error))
            return
        waiting = False

        def acknowledged(outcomes: dict[TopicPartition, ErrorCode]) -> None:
            error = outcomes[tp]
            outcome = error if error is ErrorCode.none else self._append_error(error)
            if waiting:  # from the purgatory: on the next turn (see the module doc)
                asyncio.get_running_loop().call_soon(done, outcome)
            else:
                done(outcome)

        self._replica_manager.when_acknowledged(
            {tp: result.last_offset + 1}, timeout_ms=self._write_timeout_ms, callback=acknowledged
        )
        waiting = True

    async def _committed(self, tp: TopicPartition, offset: int) -> ErrorCode:
        """The acks=all outcome of a write (of this broker) ending before ``offset``."""
        outcomes = await self._replica_manager.wait_for_acks(
            {tp: offset}, timeout_ms=self._write_timeout_ms
        )
        return outcomes[tp]
