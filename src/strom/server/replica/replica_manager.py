"""The partitions this broker holds a replica of, and what the data APIs and replication ask
of them (Kafka's ReplicaManager).

The metadata image says which partitions exist, who leads them, their leader epoch and ISR; the
log manager holds their logs, and each log its **high watermark** (the offset below which every
replica of the ISR has the data and consumers may read,
:attr:`strom.storage.partition_log.PartitionLog.high_watermark`). On top of those, this module
keeps the state that is neither in the image nor in the log: on a leader, its followers' state
(``strom.replication.partition_replication``), which says where the high watermark may move.

* ``apply_metadata`` (Kafka's ``applyDelta``): after each metadata change, the partitions this
  broker leads now get a new leader state in a new leader epoch (which starts at the log end),
  those it follows now lose theirs, and the answer tells the fetchers
  (``strom.server.replica.replica_fetcher``) what to fetch from whom. Waiting operations re-check
  (``leadership``).

* ``append_records`` (Kafka's ``appendRecords``): append a producer's batches
  (``append_to_local_log``: one ``PartitionLog.append`` per partition, then
  ``maybe_advance_high_watermark``), synchronously and in call order, then for acks=all wait
  until each is acknowledged (``delayed_produce``; ``when_acknowledged`` / ``wait_for_acks``
  for the coordinators' writes and transaction markers). The appends: ``replica_append``.
* ``fetch_messages`` (Kafka's ``fetchMessages``): read each partition with the request's
  byte budget, answer at once or long-poll (``delayed_fetch``); a consumer's ``read`` gives
  file regions up to the high watermark (read_uncommitted) or the last stable offset
  (read_committed, with the aborted transactions overlapping what was read, from the
  ``.txnindex``): the log's read takes the ``FetchIsolation`` of the isolation level
  (:func:`fetch_isolation`) and stops there. The last batch may be cut short by the byte
  limit, as Kafka's. The reads: ``replica_read``.
* ``write_txn_marker``: the transaction coordinator's COMMIT/ABORT marker for one partition
  (WriteTxnMarkers); marker listeners (``add_txn_marker_listener``) hear of each one after it
  is appended and the high watermark moved.
* ``list_offset``, ``delete_records``, ``end_offset_for_epoch``: ListOffsets, DeleteRecords and
  OffsetForLeaderEpoch.

* ``read_for_follower``: a follower's fetch on the leader, up to the log end, or the diverging
  epoch (KIP-320); it records the follower's position (``record_follower_fetch``), which may
  move the high watermark and bring the follower back into the ISR. ``check_isr`` (periodic)
  proposes removing followers that fell behind; ISR changes go out through
  ``isr_change_sender`` (AlterPartition) and come back through ``isr_change_done``
  (``replica_isr``).
* ``append_as_follower``, ``truncate_follower``, ``reset_follower``: the fetcher's side, done
  to one partition's log by :class:`strom.server.replica.partition.Partition` (Kafka's
  ``cluster.Partition``), which also answers ListOffsets.
* ``checkpoint_high_watermarks``: ``replication-offset-checkpoint``, written from the logs'
  high watermarks and read back into each log when its partition state is first made.

High watermark: on a leader, the smallest log end offset among the ISR (Kafka's
``Partition.maybeIncrementLeaderHW``: ``PartitionReplication.high_watermark_candidate``, given
to ``PartitionLog.maybe_increment_high_watermark``), never moving back; with the leader alone
in the ISR it follows the log end offset after each append. On a follower, the leader's, at
most its own log end. Truncation lowers it and a rising log start raises it (the log does
both). Listeners hear of every advance with the bytes that became readable, and of leadership
and ISR changes (``None``); log end listeners hear of every append. The replica manager's own
purgatories are among them: produce (acks=all) and consumer fetch on the high watermark,
follower fetch on the log end and on leadership and ISR changes (``shutdown_purgatories``
completes them all; a partition that is no longer led here answers what waits on it at once).

Errors are Kafka's: UNKNOWN_TOPIC_OR_PARTITION for a partition the image lacks,
NOT_LEADER_OR_FOLLOWER when another broker leads it (or its log is not open yet),
FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH when the client's leader epoch is older / newer
than the partition's, storage's KafkaError codes for bad batches.

Idempotent producers: ``PartitionLog.append`` keeps each partition's producer state
(``strom.storage.producer_state``) and makes Kafka's client-batch checks. A rejected batch
(INVALID_PRODUCER_EPOCH, OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_RECORD for control batches or a
producer id without a sequence) arrives as the KafkaError every append failure is, and a
duplicate as the ``AppendInfo`` of the original batch (the high watermark is already past it).
Records refused one by one (keyless records on a compacted topic) carry ``record_errors``
(``storage.log_validator.RecordValidationError``). The last stable offset
(:attr:`PartitionLog.last_stable_offset`) is the smaller of the high watermark and the same
state's first unstable offset (the first offset of the oldest ongoing transaction); it moves
when a marker ends that transaction, which also moves the high watermark, so the high
watermark listeners (the fetch purgatory) hear of it.

Not thread-safe: the event loop thread calls everything.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Final

from strom.common import Clock, ErrorCode, KafkaError, TopicPartition
from strom.common.timer import Timer
from strom.config import ServerConfig, TopicConfig
from strom.metadata.delta import MetadataDelta
from strom.metadata.image import MetadataImage, PartitionRegistration
from strom.protocol.framing import BytesLike
from strom.replication.partition_replication import IsrChange
from strom.server.api.metadata_view import MetadataView
from strom.server.metrics import NodeMetrics, PartitionTraffic
from strom.server.replica import leadership, replica_append, replica_isr, replica_read
from strom.server.replica.delayed_fetch import DelayedFetch, FetchPartitions
from strom.server.replica.delayed_produce import (
    AcksCallback,
    DelayedProduce,
    delay_produce,
    wait_for_acks,
)
from strom.server.replica.partition import LATEST_TIERED_TIMESTAMP, Partition, fetch_isolation
from strom.server.replica.purgatory import Purgatory
from strom.server.replica.replica_results import (
    READ_COMMITTED,
    READ_LOG_END,
    READ_UNCOMMITTED,
    AppendResult,
    FetchParams,
    FollowTarget,
    HighWatermarkUpdate,
    LeadershipChanges,
    OffsetAnswer,
    ReadResultInfo,
)
from strom.server.replica.replication_quota import ReplicationQuota
from strom.storage.checkpoint import (
    CheckpointError,
    read_offset_checkpoint,
    write_offset_checkpoint,
)
from strom.storage.leader_epoch_cache import EpochEndOffset
from strom.storage.log_manager import LogManager
from strom.storage.partition_log import (
    FetchIsolation,
)
from strom.storage.producer_state import AppendOrigin

__all__ = [
    "LATEST_TIERED_TIMESTAMP",
    "READ_COMMITTED",
    "READ_LOG_END",
    "READ_UNCOMMITTED",
    "REPLICATION_OFFSET_CHECKPOINT",
    "AppendResult",
    "FetchParams",
    "FollowTarget",
    "HighWatermarkListener",
    "HighWatermarkUpdate",
    "IsrChangeSender",
    "LeadershipChanges",
    "OffsetAnswer",
    "Partition",
    "ReadResultInfo",
    "ReplicaManager",
    "TxnMarkerListener",
    "fetch_isolation",
]

log = logging.getLogger(__name__)

REPLICATION_OFFSET_CHECKPOINT: Final = "replication-offset-checkpoint"
_MAX_BYTES: Final = 2**31 - 1


HighWatermarkListener = Callable[[TopicPartition, HighWatermarkUpdate | None], object]
TxnMarkerListener = Callable[[TopicPartition, int, int, bool], object]
"""``listener(tp, producer_id, producer_epoch, commit)`` after a marker is appended."""


IsrChangeSender = Callable[[TopicPartition, int, IsrChange], object]
"""``send(tp, leader_epoch, change)``: propose an ISR change to the controller."""


class ReplicaManager:
    """Partition state and the data path of one broker (see the module doc)."""

    def __init__(
        self,
        *,
        node_id: int,
        log_manager: LogManager,
        metadata: MetadataView,
        config: ServerConfig,
        clock: Clock,
        topic_config: Callable[[MetadataImage, str], TopicConfig] | None = None,
        timer: Timer | None = None,
        metrics: NodeMetrics | None = None,
    ) -> None:
        """``topic_config`` gives a topic's effective settings (min.insync.replicas); by
        default the topic's overrides in the image over ``config``. ``timer`` runs the
        purgatories' timeouts (the event loop's by default; a simulation's virtual one).
        ``metrics``: the node's counters (None: not counted)."""
        self.node_id = node_id
        self.metrics = metrics
        self.traffic = PartitionTraffic()
        """Bytes in and out per partition (always counted: the balancer's load)."""
        self.log_manager = log_manager
        self._metadata = metadata
        self._config = config
        self.clock = clock
        self._topic_config = topic_config or (
            lambda image, topic: TopicConfig(config, image.topic_configs(topic))
        )
        self._max_lag_ms = config.get_int("replica.lag.time.max.ms")
        self.local_partitions: dict[TopicPartition, Partition] = {}
        self.produce_purgatory: Purgatory[DelayedProduce] = Purgatory("Produce", timer)
        self.fetch_purgatory: Purgatory[DelayedFetch] = Purgatory("Fetch", timer)
        self.follower_fetch_purgatory: Purgatory[DelayedFetch] = Purgatory("ReplicaFetch", timer)
        self._listeners: list[HighWatermarkListener] = [
            self.produce_purgatory.check_and_complete,
            self.fetch_purgatory.check_and_complete,
        ]
        self.log_end_listeners: list[HighWatermarkListener] = [
            self.follower_fetch_purgatory.check_and_complete
        ]
        self.purgatories: tuple[Purgatory[DelayedProduce] | Purgatory[DelayedFetch], ...] = (
            self.produce_purgatory,
            self.fetch_purgatory,
            self.follower_fetch_purgatory,
        )
        self.marker_listeners: list[TxnMarkerListener] = []
        self._min_isr_image: MetadataImage | None = None
        self._min_isr: dict[str, int] = {}
        self._eligible_cluster: object = None
        self._eligible: Mapping[int, int] = {}
        self.isr_change_sender: IsrChangeSender | None = None
        """Where ISR changes go (the AlterPartition manager); None: they are not proposed."""
        self.leader_quota: ReplicationQuota | None = None
        """``leader.replication.throttled.rate`` on what followers out of sync fetch."""
        self._checkpoint_path = log_manager.data_dir / REPLICATION_OFFSET_CHECKPOINT
        self._checkpointed = self._read_high_watermarks()
        self._checkpoint_lock = threading.Lock()

    @property
    def image(self) -> MetadataImage:
        return self._metadata.image

    def add_high_watermark_listener(self, listener: HighWatermarkListener) -> None:
        """``listener(tp, update)`` after each high watermark advance, and ``(tp, None)`` when
        the partition's leadership or ISR changed (waiting operations re-check)."""
        self._listeners.append(listener)

    def add_log_end_listener(self, listener: HighWatermarkListener) -> None:
        """``listener(tp, update)`` after each append on a leader (followers' long polls)."""
        self.log_end_listeners.append(listener)

    def add_txn_marker_listener(self, listener: TxnMarkerListener) -> None:
        """Call ``listener(tp, producer_id, producer_epoch, commit)`` after each marker."""
        self.marker_listeners.append(listener)

    # --- partitions ------------------------------------------------------------------------

    def partition(self, tp: TopicPartition, *, current_leader_epoch: int = -1) -> Partition:
        """The partition, led by this broker; raises KafkaError as the module doc says.

        ``current_leader_epoch`` is the client's idea of the leader epoch (-1: unknown, no
        check).
        """
        registration = self._registration(tp)
        if registration.leader != self.node_id:
            raise KafkaError(
                ErrorCode.not_leader_or_follower,
                f"{tp} is led by broker {registration.leader}, not {self.node_id}",
            )
        _check_epoch(tp, current_leader_epoch, registration.leader_epoch)
        partition = self.local_partition(tp, registration)
        replication = partition.replication
        if replication is None or replication.leader_epoch != registration.leader_epoch:
            leadership.become_leader(
                partition,
                node_id=self.node_id,
                max_lag_ms=self._max_lag_ms,
                now_ms=self.clock.monotonic_ms(),
            )
            self.maybe_advance_high_watermark(partition)
        elif registration.partition_epoch > replication.partition_epoch:
            if registration.replicas != replication.replicas:
                replication.reassigned(registration.replicas)
            before = len(replication.isr)
            replication.isr_committed(registration.isr, registration.partition_epoch)
            replica_isr.count_isr_change(self, before, len(registration.isr))
        elif (
            registration.partition_epoch == replication.partition_epoch
            and registration.replicas != replication.replicas
        ):
            # The controller completed a reassignment in the record of this leader's own ISR
            # change: its answer gave that epoch and ISR, only the metadata gives the replicas.
            # A change proposed since stays pending: the controller may commit it.
            replication.reassigned(registration.replicas)
        return partition

    def _registration(self, tp: TopicPartition) -> PartitionRegistration:
        registration = self.image.topics.get_partition(tp)
        if registration is None:
            self.local_partitions.pop(tp, None)
            raise KafkaError(
                ErrorCode.unknown_topic_or_partition, f"this server does not host {tp}"
            )
        return registration

    def local_partition(self, tp: TopicPartition, registration: PartitionRegistration) -> Partition:
        """The partition's state over its open log, made when first needed."""
        partition_log = self.log_manager.get(tp)
        if partition_log is None:
            raise KafkaError(
                ErrorCode.not_leader_or_follower, f"the log of {tp} is not open on this broker"
            )
        partition = self.local_partitions.get(tp)
        if partition is None or partition.log is not partition_log:
            # New, or the topic was deleted and created again: start from the checkpoint.
            checkpointed = self._checkpointed.pop(tp, None)
            if checkpointed is not None:
                partition_log.update_high_watermark(checkpointed)
            partition = Partition(tp, partition_log, registration)
            self.local_partitions[tp] = partition
        partition.registration = registration
        return partition

    def apply_metadata(self, delta: MetadataDelta, image: MetadataImage) -> LeadershipChanges:
        """This broker's part of a metadata change (:func:`leadership.apply_delta`)."""
        return leadership.apply_delta(self, delta)

    def notify(self, tp: TopicPartition, update: HighWatermarkUpdate | None) -> None:
        """Tell the high watermark listeners of ``update`` on ``tp`` (None: its leadership or
        ISR changed)."""
        for listener in self._listeners:
            listener(tp, update)
        if update is None:  # a leadership or ISR change: followers' long polls re-check too
            self.follower_fetch_purgatory.check_and_complete(tp)

    def high_watermarks(self) -> dict[TopicPartition, int]:
        """The high watermark of each partition with state here, leader or follower
        (retention deletes nothing at or above it); other logs are left out."""
        result: dict[TopicPartition, int] = {}
        for tp, partition_log in self.log_manager.all().items():
            partition = self.local_partitions.get(tp)
            if partition is None or partition.log is not partition_log:
                try:
                    partition = self.partition(tp)
                except KafkaError:
                    continue
            result[tp] = partition.log.high_watermark
        return result

    def maybe_advance_high_watermark(self, partition: Partition) -> HighWatermarkUpdate | None:
        """On a leader, move the high watermark up to what every counted replica has
        (``PartitionReplication``); listeners hear of an advance."""
        replication = partition.replication
        if replication is None:
            return None
        followers = bool(replication.followers)
        candidate = replication.high_watermark_candidate(
            partition.log_end_offset,
            now_ms=self.clock.monotonic_ms(),
            min_isr=self.min_insync_replicas(partition.tp.topic) if followers else 1,
            eligible=self.eligible_brokers() if followers else None,
        )
        if candidate is None:
            return None
        return self._advance(partition, candidate)

    def _advance(self, partition: Partition, candidate: int) -> HighWatermarkUpdate | None:
        """Move the log's high watermark up to ``candidate``; listeners hear of an advance."""
        partition_log = partition.log
        old = partition_log.high_watermark
        if not partition_log.maybe_increment_high_watermark(candidate):
            return None
        new = partition_log.high_watermark
        size = 0
        pending = partition._unreplicated
        while pending and pending[0][0] <= new:
            size += pending.popleft()[1]
        if not size:  # appended before this broker led: measure it
            size = partition_log.readable_bytes(
                old, max_bytes=_MAX_BYTES, isolation=FetchIsolation.HIGH_WATERMARK
            )
        update = HighWatermarkUpdate(old, new, size)
        self.notify(partition.tp, update)
        return update

    # --- the leader's side of replication ----------------------------------------------------

    def record_follower_fetch(
        self, tp: TopicPartition, *, replica_id: int, log_end_offset: int, replica_epoch: int = -1
    ) -> None:
        """A follower's position (:func:`replica_isr.record_follower_fetch`)."""
        replica_isr.record_follower_fetch(
            self,
            tp,
            replica_id=replica_id,
            log_end_offset=log_end_offset,
            replica_epoch=replica_epoch,
        )

    def check_isr(self) -> None:
        """Propose shrinking the ISRs of lagging followers (:func:`replica_isr.check_isr`)."""
        replica_isr.check_isr(self)

    def isr_change_done(
        self,
        tp: TopicPartition,
        *,
        leader_epoch: int,
        change: IsrChange,
        isr: tuple[int, ...] | None,
        partition_epoch: int = -1,
        error: ErrorCode | None = None,
    ) -> bool:
        """The controller answered ``change`` (:func:`replica_isr.isr_change_done`)."""
        return replica_isr.isr_change_done(
            self,
            tp,
            leader_epoch=leader_epoch,
            change=change,
            isr=isr,
            partition_epoch=partition_epoch,
            error=error,
        )

    def read_for_follower(
        self,
        tp: TopicPartition,
        *,
        replica_id: int,
        replica_epoch: int = -1,
        fetch_offset: int,
        max_bytes: int,
        current_leader_epoch: int,
        last_fetched_epoch: int,
    ) -> ReadResultInfo:
        """A follower's fetch (:func:`replica_read.read_for_follower`)."""
        return replica_read.read_for_follower(
            self,
            tp,
            replica_id=replica_id,
            replica_epoch=replica_epoch,
            fetch_offset=fetch_offset,
            max_bytes=max_bytes,
            current_leader_epoch=current_leader_epoch,
            last_fetched_epoch=last_fetched_epoch,
        )

    # --- the follower's side -----------------------------------------------------------------

    def follower(self, tp: TopicPartition, leader_epoch: int) -> Partition:
        """The partition this broker follows in ``leader_epoch``; KafkaError otherwise (it
        leads it now, or the epoch moved on: the fetcher drops what it fetched)."""
        registration = self._registration(tp)
        if registration.leader == self.node_id or self.node_id not in registration.replicas:
            raise KafkaError(ErrorCode.not_leader_or_follower, f"{tp} is not followed here")
        _check_epoch(tp, leader_epoch, registration.leader_epoch)
        partition = self.local_partition(tp, registration)
        partition.replication = None
        return partition

    def append_as_follower(
        self,
        tp: TopicPartition,
        records: bytes,
        *,
        leader_epoch: int,
        high_watermark: int,
        log_start_offset: int,
    ) -> int:
        """What the leader sent, appended to the partition followed in ``leader_epoch``
        (:meth:`Partition.append_as_follower`); the number of bytes appended."""
        return self.follower(tp, leader_epoch).append_as_follower(
            records, high_watermark=high_watermark, log_start_offset=log_start_offset
        )

    def truncate_follower(
        self, tp: TopicPartition, *, leader_epoch: int, diverging: EpochEndOffset
    ) -> int:
        """The leader says this log diverged (:meth:`Partition.truncate_to_diverging`); the
        new log end offset."""
        return self.follower(tp, leader_epoch).truncate_to_diverging(diverging)

    def reset_follower(
        self, tp: TopicPartition, *, leader_epoch: int, leader_start: int, leader_end: int
    ) -> int:
        """The leader answered OFFSET_OUT_OF_RANGE (:meth:`Partition.reset_to_leader`); the
        new log end offset."""
        return self.follower(tp, leader_epoch).reset_to_leader(
            leader_start=leader_start, leader_end=leader_end
        )

    # --- high watermark checkpoint -----------------------------------------------------------

    def high_watermark_checkpoint(self) -> Callable[[], None]:
        """Each local partition's high watermark now (Kafka's ``checkpointHighWatermarks``),
        and the job that writes them to ``replication-offset-checkpoint`` (read back at the next
        start), fsyncs included: run it on a worker thread. Jobs write one at a time; a slower
        one may leave an older file, which only makes a restart start lower."""
        offsets = dict(self._checkpointed)
        for tp, partition in self.local_partitions.items():
            if self.log_manager.get(tp) is partition.log:
                offsets[tp] = partition.log.high_watermark
        path = self._checkpoint_path

        def write() -> None:
            with self._checkpoint_lock:
                write_offset_checkpoint(path, offsets)

        return write

    def checkpoint_high_watermarks(self) -> None:
        """:meth:`high_watermark_checkpoint` on this thread (at shutdown)."""
        self.high_watermark_checkpoint()()

    def _read_high_watermarks(self) -> dict[TopicPartition, int]:
        try:
            return read_offset_checkpoint(self._checkpoint_path)
        except CheckpointError as error:
            log.warning("ignoring unreadable high watermark checkpoint: %s", error)
            return {}

    # --- produce ---------------------------------------------------------------------------

    async def append_records(
        self,
        entries: Iterable[tuple[TopicPartition, BytesLike | None]],
        *,
        required_acks: int,
        timeout_ms: int,
        internal_topics_allowed: bool = False,
        origin: AppendOrigin = AppendOrigin.CLIENT,
    ) -> list[tuple[TopicPartition, AppendResult]]:
        """Kafka's ``appendRecords``: :meth:`append_to_local_log`, then for acks=all wait at
        most ``timeout_ms`` until each appended partition is acknowledged (``delayed_produce``);
        each result in order, an acks=all failure (REQUEST_TIMED_OUT...) in place of NONE.
        The appends are done before the coroutine first suspends (callers keep their order).
        """
        results = self.append_to_local_log(
            entries,
            required_acks=required_acks,
            internal_topics_allowed=internal_topics_allowed,
            origin=origin,
        )
        if required_acks != -1:
            return results
        required = {
            tp: result.last_offset + 1 for tp, result in results if result.error == ErrorCode.none
        }
        if not required:
            return results
        outcomes = await self.wait_for_acks(required, timeout_ms=timeout_ms)
        return [
            (tp, result.acknowledged(outcomes[tp]) if tp in outcomes else result)
            for tp, result in results
        ]

    def when_acknowledged(
        self,
        required_offsets: Mapping[TopicPartition, int],
        *,
        timeout_ms: int,
        callback: AcksCallback,
    ) -> None:
        """``callback(outcomes)`` once each partition's high watermark reaches its required
        offset, or the partition failed, or ``timeout_ms`` passed (REQUEST_TIMED_OUT): at once
        when all are decided, else from the produce purgatory (``delayed_produce``)."""
        delay_produce(
            self, self.produce_purgatory, required_offsets, timeout_ms=timeout_ms, callback=callback
        )

    async def wait_for_acks(
        self, required_offsets: Mapping[TopicPartition, int], *, timeout_ms: int
    ) -> dict[TopicPartition, ErrorCode]:
        """:meth:`when_acknowledged`, awaited (no suspension when all are decided already)."""
        return await wait_for_acks(
            self, self.produce_purgatory, required_offsets, timeout_ms=timeout_ms
        )

    def append_to_local_log(
        self,
        entries: Iterable[tuple[TopicPartition, BytesLike | None]],
        *,
        required_acks: int,
        internal_topics_allowed: bool = False,
        origin: AppendOrigin = AppendOrigin.CLIENT,
    ) -> list[tuple[TopicPartition, AppendResult]]:
        """Append each partition's batches now (:func:`replica_append.append_to_local_log`)."""
        return replica_append.append_to_local_log(
            self,
            entries,
            required_acks=required_acks,
            internal_topics_allowed=internal_topics_allowed,
            origin=origin,
        )

    def write_txn_marker(
        self,
        tp: TopicPartition,
        *,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
    ) -> ErrorCode:
        """The coordinator's COMMIT/ABORT marker (:func:`replica_append.write_txn_marker`)."""
        return replica_append.write_txn_marker(
            self,
            tp,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            commit=commit,
            coordinator_epoch=coordinator_epoch,
        )

    def log_end_offset(self, tp: TopicPartition) -> int:
        """The log end offset of a partition led here (after a marker: the offset an acks=all
        wait for it needs); raises KafkaError."""
        return self.partition(tp).log_end_offset

    def eligible_brokers(self) -> Mapping[int, int]:
        """Active broker id -> registered epoch, computed once per cluster image."""
        cluster = self.image.cluster
        if cluster is not self._eligible_cluster:
            self._eligible_cluster = cluster
            self._eligible = cluster.active_broker_epochs()
        return self._eligible

    def min_insync_replicas(self, topic: str) -> int:
        image = self.image
        if image is not self._min_isr_image:
            self._min_isr_image = image
            self._min_isr = {}
        value = self._min_isr.get(topic)
        if value is None:
            value = self._topic_config(image, topic).get_int("min.insync.replicas")
            self._min_isr[topic] = value
        return value

    def is_acknowledged(self, tp: TopicPartition, required_offset: int) -> ErrorCode | None:
        """acks=all: NONE once the high watermark reaches ``required_offset``, None before.

        NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank below min.insync.replicas
        meanwhile; the partition's error when it is gone or led elsewhere.
        """
        try:
            partition = self.partition(tp)
        except KafkaError as error:
            return error.error_code
        replication = partition.replication
        assert replication is not None
        state = replication.ack_state(
            required_offset,
            high_watermark=partition.log.high_watermark,
            min_insync_replicas=self.min_insync_replicas(tp.topic),
        )
        return state.error if state.done else None

    # --- fetch -----------------------------------------------------------------------------

    async def fetch_messages(
        self, params: FetchParams, partitions: FetchPartitions
    ) -> list[ReadResultInfo]:
        """Kafka's ``fetchMessages`` (:func:`replica_read.fetch_messages`)."""
        return await replica_read.fetch_messages(self, params, partitions)

    def read_from_log(
        self, params: FetchParams, partitions: FetchPartitions
    ) -> list[ReadResultInfo]:
        """Kafka's ``readFromLog`` (:func:`replica_read.read_from_log`)."""
        return replica_read.read_from_log(self, params, partitions)

    def shutdown_purgatories(self) -> None:
        """Complete every waiting produce and fetch now, and later ones on arrival (a stopping
        broker answers its long polls rather than leaving them to their max wait)."""
        for purgatory in self.purgatories:
            purgatory.shutdown()

    def read(
        self,
        tp: TopicPartition,
        *,
        fetch_offset: int,
        max_bytes: int,
        min_one_message: bool,
        isolation_level: int = READ_UNCOMMITTED,
        current_leader_epoch: int = -1,
    ) -> ReadResultInfo:
        """A consumer's read (:func:`replica_read.read_for_consumer`)."""
        return replica_read.read_for_consumer(
            self,
            tp,
            fetch_offset=fetch_offset,
            max_bytes=max_bytes,
            min_one_message=min_one_message,
            isolation_level=isolation_level,
            current_leader_epoch=current_leader_epoch,
        )

    # --- ListOffsets -----------------------------------------------------------------------

    def list_offset(
        self,
        tp: TopicPartition,
        *,
        timestamp: int,
        isolation_level: int | None,
        current_leader_epoch: int = -1,
    ) -> OffsetAnswer:
        """ListOffsets for one partition; raises KafkaError.

        ``isolation_level`` None (a replica's or a debugging request) bounds nothing: latest
        is the log end offset. Otherwise latest is the high watermark / last stable offset and
        a timestamp lookup only finds offsets below it (Kafka's
        ``Partition.fetchOffsetForTimestamp``). No match: offset and timestamp -1.
        """
        partition = self.partition(tp, current_leader_epoch=current_leader_epoch)
        return partition.offset_for_timestamp(timestamp, isolation_level=isolation_level)

    # --- DeleteRecords ---------------------------------------------------------------------

    def delete_records(self, tp: TopicPartition, offset: int) -> int:
        """Move the log start offset to ``offset`` (-1: the high watermark); the new low
        watermark. Raises KafkaError: OFFSET_OUT_OF_RANGE past the high watermark or for a
        negative offset, POLICY_VIOLATION on a topic without ``delete`` in cleanup.policy."""
        partition = self.partition(tp)
        if not partition.log.config.deletes:
            raise KafkaError(
                ErrorCode.policy_violation,
                f"records of {tp} cannot be deleted: its cleanup.policy has no 'delete'",
            )
        high_watermark = partition.log.high_watermark
        target = high_watermark if offset == -1 else offset
        if target < 0 or target > high_watermark:
            raise KafkaError(
                ErrorCode.offset_out_of_range,
                f"cannot delete records of {tp} before offset {offset}: it is outside "
                f"[0, high watermark {high_watermark}]",
            )
        if partition.log.advance_log_start_offset(target, within_high_watermark=True):
            self.log_manager.checkpoint()
        return partition.log_start_offset

    # --- OffsetForLeaderEpoch --------------------------------------------------------------

    def end_offset_for_epoch(
        self, tp: TopicPartition, *, leader_epoch: int, current_leader_epoch: int = -1
    ) -> tuple[int, int]:
        """(epoch, end offset) of ``leader_epoch``, from the log's leader epoch cache (Kafka's
        ``LeaderEpochFileCache.endOffsetFor``)."""
        partition = self.partition(tp, current_leader_epoch=current_leader_epoch)
        answer = partition.log.end_offset_for_epoch(leader_epoch)
        return answer.epoch, answer.end_offset


def _check_epoch(tp: TopicPartition, expected: int, current: int) -> None:
    """FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH for a request whose leader epoch is older /
    newer than the partition's (-1: no check)."""
    if expected < 0 or expected == current:
        return
    if expected < current:
        raise KafkaError(
            ErrorCode.fenced_leader_epoch,
            f"leader epoch {expected} of {tp} is older than the current {current}",
        )
    raise KafkaError(
        ErrorCode.unknown_leader_epoch,
        f"leader epoch {expected} of {tp} is newer than the current {current}",
    )
