"""The I/O shell around the group coordinator core, on ``__consumer_offsets``
(:mod:`strom.server.coordinator.coordinator_runtime` has what both coordinators' shells share).

* Loading reads back offsets, group metadata and static members; markers (control batches)
  decide the pending transactional offsets they belong to.
* :meth:`GroupCoordinatorRuntime.append` is the core's :class:`PartitionWriter`. A
  transactional offset commit is a transactional batch of the producer (its id and epoch, base
  sequence 0, as Kafka's coordinator writes it), appended as the coordinator (epoch check only).
* Transaction markers: the replica manager tells :meth:`GroupCoordinatorRuntime.on_txn_marker`
  of every marker it appends; those on ``__consumer_offsets`` decide the producer's pending
  offsets in the core.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Protocol

from strom.common import Clock, ErrorCode, TopicPartition
from strom.common.timer import Timer
from strom.config import ServerConfig
from strom.controller.topic_names import GROUP_METADATA_TOPIC
from strom.coordinator.group import CoordinatorRecord, CoordinatorSettings, GroupCoordinator
from strom.coordinator.group.records import UnknownRecordTypeError, decode_key, decode_value
from strom.protocol.batch import NO_PRODUCER_ID, BatchHeader
from strom.protocol.records import ControlRecordType, iter_records, read_control_record
from strom.server.channel.auto_topics import AutoTopicCreator
from strom.server.coordinator.coordinator_runtime import CoordinatorReplicas, CoordinatorRuntime

__all__ = ["GroupCoordinatorRuntime", "settings_from_config"]


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


class GroupReplicas(CoordinatorReplicas, Protocol):
    """The replica manager as the group coordinator uses it: also told of each transaction
    marker (its transactional offset commits end with them)."""

    def add_txn_marker_listener(
        self, listener: Callable[[TopicPartition, int, int, bool], object]
    ) -> None: ...


class GroupCoordinatorRuntime(CoordinatorRuntime[GroupCoordinator, CoordinatorRecord]):
    """Owns the :class:`GroupCoordinator` of this broker and everything around it."""

    def __init__(
        self,
        *,
        config: ServerConfig,
        replica_manager: GroupReplicas,
        auto_topics: AutoTopicCreator,
        clock: Clock,
        timer: Timer | None = None,
    ) -> None:
        """``timer``: what the core's timers wait on (the event loop's by default)."""
        super().__init__(
            topic=GROUP_METADATA_TOPIC,
            replica_manager=replica_manager,
            auto_topics=auto_topics,
            clock=clock,
            write_timeout_ms=config.get_int("offsets.commit.timeout.ms"),
            timer=timer,
        )
        self.coordinator = GroupCoordinator(
            settings=settings_from_config(config),
            writer=self,
            random=random.Random(),
            topic_exists=self._topic_exists,
        )
        replica_manager.add_txn_marker_listener(self.on_txn_marker)

    def _topic_exists(self, topic: str, partition: int) -> bool:
        return (
            self._replica_manager.image.topics.get_partition(TopicPartition(topic, partition))
            is not None
        )

    # --- loading ------------------------------------------------------------------------------

    def _finish_loading(self, partition: int, leader_epoch: int) -> None:
        self.coordinator.finish_loading(partition, self.now_ms())

    def _replay_control(self, partition: int, header: BatchHeader, batch: bytes) -> None:
        for record in iter_records(batch):
            kind, _ = read_control_record(record)
            self.coordinator.complete_transaction(
                partition, header.producer_id, commit=kind is ControlRecordType.COMMIT
            )

    @staticmethod
    def _decode(key: bytes, value: bytes | None) -> CoordinatorRecord | None:
        try:
            decoded = decode_key(key)
            return CoordinatorRecord(decoded, decode_value(decoded, value))
        except UnknownRecordTypeError:
            return None  # a newer group type's record, as Kafka's loader skips it

    def _replay(self, header: BatchHeader, record: CoordinatorRecord) -> None:
        producer_id = header.producer_id if header.is_transactional else NO_PRODUCER_ID
        self.coordinator.replay(record, producer_id=producer_id)

    # --- the core's PartitionWriter (CoordinatorRuntime.append) --------------------------------

    @staticmethod
    def _append_error(code: ErrorCode) -> ErrorCode:
        """What the coordinator answers for a failed append (Kafka's mapping; the producer's own
        errors of a transactional offset commit pass through)."""
        if code in _PRODUCER_ERRORS:
            return code
        if code in (ErrorCode.not_leader_or_follower, ErrorCode.kafka_storage_error):
            return ErrorCode.not_coordinator
        if code in (
            ErrorCode.message_too_large,
            ErrorCode.record_list_too_large,
            ErrorCode.invalid_fetch_size,
        ):
            return ErrorCode.invalid_commit_offset_size
        return ErrorCode.coordinator_not_available

    # --- transaction markers ------------------------------------------------------------------

    def on_txn_marker(
        self, tp: TopicPartition, producer_id: int, producer_epoch: int, commit: bool
    ) -> None:
        """The replica manager appended a marker; one on ``__consumer_offsets`` decides the
        producer's pending offsets of the groups in that partition."""
        if tp.topic == GROUP_METADATA_TOPIC:
            self.coordinator.complete_transaction(tp.partition, producer_id, commit=commit)


_PRODUCER_ERRORS = frozenset(
    {ErrorCode.invalid_producer_epoch, ErrorCode.producer_fenced, ErrorCode.invalid_txn_state}
)
