"""The I/O shell around the group coordinator core (Kafka's ``CoordinatorRuntime``, in small).

* ``__consumer_offsets`` is created on the first FindCoordinator for a group
  (:meth:`GroupCoordinatorRuntime.ensure_offsets_topic`, through the controller with the
  ``offsets.topic.*`` settings, as ``AutoTopicCreator`` does it).
* :meth:`GroupCoordinatorRuntime.load`: at start, every partition of an existing
  ``__consumer_offsets`` is read back into the core (offsets, group metadata, static members).
* :meth:`GroupCoordinatorRuntime.append`: the core's :class:`PartitionWriter`; records become
  one batch appended to the group's partition through the replica manager; the core hears the
  outcome once the high watermark passed them (at once on a single node).
* The core's timers are driven by one asyncio task that sleeps until ``next_deadline`` or until
  :meth:`GroupCoordinatorRuntime.wake` (after every request) says it may have changed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable, Sequence
from typing import TypeVar

from strom.common import Clock, ErrorCode, TopicPartition
from strom.config import ServerConfig
from strom.controller.topic_names import GROUP_METADATA_TOPIC
from strom.coordinator.group import (
    CoordinatorRecord,
    CoordinatorSettings,
    GroupCoordinator,
    Reply,
)
from strom.coordinator.group.records import UnknownRecordTypeError, decode_key, decode_value
from strom.protocol.batch import HEADER_SIZE, BatchHeader
from strom.protocol.records import Record, build_batch, iter_records
from strom.protocol.schema import SchemaError
from strom.server.auto_topics import AutoTopicCreator
from strom.server.replica_manager import ReplicaManager

__all__ = ["GroupCoordinatorRuntime", "settings_from_config"]

log = logging.getLogger(__name__)

T = TypeVar("T")

_READ_CHUNK = 1 << 20


def settings_from_config(config: ServerConfig) -> CoordinatorSettings:
    return CoordinatorSettings(
        initial_rebalance_delay_ms=config.get_int("group.initial.rebalance.delay.ms"),
        min_session_timeout_ms=config.get_int("group.min.session.timeout.ms"),
        max_session_timeout_ms=config.get_int("group.max.session.timeout.ms"),
        max_size=config.get_int("group.max.size"),
        offsets_retention_ms=config.get_int("offsets.retention.minutes") * 60_000,
        retention_check_interval_ms=config.get_int("offsets.retention.check.interval.ms"),
        offset_metadata_max_bytes=config.get_int("offset.metadata.max.bytes"),
    )


class GroupCoordinatorRuntime:
    """Owns the :class:`GroupCoordinator` of this broker and everything around it."""

    def __init__(
        self,
        *,
        config: ServerConfig,
        replica_manager: ReplicaManager,
        auto_topics: AutoTopicCreator,
        clock: Clock,
    ) -> None:
        self._replica_manager = replica_manager
        self._auto_topics = auto_topics
        self._clock = clock
        self.coordinator = GroupCoordinator(
            settings=settings_from_config(config),
            writer=self,
            random=random.Random(),
            topic_exists=self._topic_exists,
        )
        self._create_lock = asyncio.Lock()
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def now_ms(self) -> int:
        return self._clock.now_ms()

    def _topic_exists(self, topic: str, partition: int) -> bool:
        return (
            self._replica_manager.image.topics.get_partition(TopicPartition(topic, partition))
            is not None
        )

    # --- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        """Load an existing ``__consumer_offsets`` and start the timer task."""
        topic = self._replica_manager.image.topics.get_topic(GROUP_METADATA_TOPIC)
        if topic is not None:
            self._load(len(topic.partitions))
        self._task = asyncio.get_running_loop().create_task(self._drive(), name="strom-groups")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    def _load(self, partitions: int) -> None:
        core = self.coordinator
        core.begin_loading(partitions)
        loaded = 0
        for partition in range(partitions):
            partition_log = self._replica_manager.log_manager.get(
                TopicPartition(GROUP_METADATA_TOPIC, partition)
            )
            if partition_log is not None:
                offset = partition_log.log_start_offset
                while offset < partition_log.log_end_offset:
                    data = partition_log.read_bytes(offset, max_bytes=_READ_CHUNK)
                    if not data:
                        break
                    offset, count = self._replay(data, offset)
                    loaded += count
            core.finish_loading(partition, self.now_ms())
        log.info(
            "loaded %d record(s) of %s: %d group(s)",
            loaded,
            GROUP_METADATA_TOPIC,
            len(core.groups),
        )

    def _replay(self, data: bytes, offset: int) -> tuple[int, int]:
        """Replay the whole batches in ``data``; the offset after them and the record count."""
        position = count = 0
        while position + HEADER_SIZE <= len(data):
            header = BatchHeader.read(data, position)
            if position + header.size > len(data):
                break
            chunk = data[position : position + header.size]
            position += header.size
            offset = header.base_offset + header.last_offset_delta + 1
            if header.is_control:
                continue
            for record in iter_records(chunk):
                if record.key is None:
                    continue
                try:
                    key = decode_key(record.key)
                    value = decode_value(key, record.value)
                except UnknownRecordTypeError:
                    continue  # a newer group type's record, as Kafka's loader skips it
                except SchemaError as error:
                    log.warning(
                        "skipping an unreadable record of %s: %s", GROUP_METADATA_TOPIC, error
                    )
                    continue
                self.coordinator.replay(CoordinatorRecord(key, value))
                count += 1
        return offset, count

    async def ensure_offsets_topic(self) -> ErrorCode:
        """Create ``__consumer_offsets`` if it does not exist yet; NONE once it does."""
        if self.coordinator.partition_count is not None:
            return ErrorCode.none
        async with self._create_lock:
            if self.coordinator.partition_count is not None:  # type: ignore[redundant-expr,unused-ignore]
                return ErrorCode.none  # type: ignore[unreachable,unused-ignore]
            image = self._replica_manager.image
            if image.topics.get_topic(GROUP_METADATA_TOPIC) is None:
                outcome = await self._auto_topics.create([GROUP_METADATA_TOPIC])
                error = outcome.get(GROUP_METADATA_TOPIC)
                if (
                    error is not None
                    and error.is_failure
                    and error.code != ErrorCode.topic_already_exists
                ):
                    return ErrorCode.coordinator_not_available
            topic = self._replica_manager.image.topics.get_topic(GROUP_METADATA_TOPIC)
            if topic is None:
                return ErrorCode.coordinator_not_available
            self._load(len(topic.partitions))
            self.wake()
            return ErrorCode.none

    # --- requests -----------------------------------------------------------------------------

    async def call(self, operation: Callable[[Reply[T]], None]) -> T:
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
            deadline = self.coordinator.next_deadline()
            timeout = None if deadline is None else max(deadline - self.now_ms(), 0) / 1000
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), timeout)
            self._changed.clear()
            try:
                self.coordinator.poll(self.now_ms())
            except Exception:
                log.exception("group coordinator timers failed")

    # --- the core's PartitionWriter -----------------------------------------------------------

    def append(
        self,
        partition: int,
        records: Sequence[CoordinatorRecord],
        done: Callable[[ErrorCode], None],
    ) -> None:
        tp = TopicPartition(GROUP_METADATA_TOPIC, partition)
        now = self.now_ms()
        batch = build_batch(
            [
                Record(offset=index, timestamp=now, key=key, value=value)
                for index, (key, value) in enumerate(record.encode() for record in records)
            ]
        )
        [(_, result)] = self._replica_manager.append_records(
            [(tp, batch)], required_acks=-1, internal_topics_allowed=True
        )
        if result.error is not ErrorCode.none:
            log.warning("cannot append to %s: %s", tp, result.message or result.error.name)
            done(_append_error(result.error))
            return
        code = self._replica_manager.is_acknowledged(tp, result.last_offset + 1)
        done(ErrorCode.none if code is None or code is ErrorCode.none else _append_error(code))


def _append_error(code: ErrorCode) -> ErrorCode:
    """What the coordinator answers for a failed append (Kafka's mapping)."""
    if code in (ErrorCode.not_leader_or_follower, ErrorCode.kafka_storage_error):
        return ErrorCode.not_coordinator
    if code in (
        ErrorCode.message_too_large,
        ErrorCode.record_list_too_large,
        ErrorCode.invalid_fetch_size,
    ):
        return ErrorCode.invalid_commit_offset_size
    return ErrorCode.coordinator_not_available
