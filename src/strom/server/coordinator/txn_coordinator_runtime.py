"""The I/O shell around the transaction coordinator core, on ``__transaction_state`` (Kafka's
``TransactionStateManager`` and ``TransactionMarkerChannelManager``, in small;
:mod:`strom.server.coordinator.coordinator_runtime` has what both coordinators' shells share).

* Loading reads back every transactional id; the core then completes a transaction left
  prepared (markers, then its Complete record) and aborts an Ongoing one once its timeout has
  passed.
* :meth:`TxnCoordinatorRuntime.write_markers` has each partition of a transaction get its
  marker from its leader, here or on another broker (:mod:`strom.server.coordinator.txn_markers`),
  including the ``__consumer_offsets`` partition of a group added by AddOffsetsToTxn.
* :meth:`TxnCoordinatorRuntime.verify_produce` is the produce path's KIP-890 check.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection
from typing import Protocol

from strom.common import Clock, ErrorCode, TopicPartition
from strom.common.timer import Timer
from strom.config import ServerConfig
from strom.controller.topic_names import TRANSACTION_STATE_TOPIC
from strom.coordinator.txn import (
    TransactionCoordinator,
    TransactionLogRecord,
    TxnSettings,
)
from strom.coordinator.txn.records import decode_key, decode_value
from strom.protocol.batch import BatchHeader
from strom.server.channel.auto_topics import AutoTopicCreator
from strom.server.coordinator.coordinator_runtime import CoordinatorReplicas, CoordinatorRuntime
from strom.server.coordinator.txn_markers import Marker, MarkerWriter, TxnMarkerChannel
from strom.server.replica.replica_fetcher import BrokerClients

__all__ = ["TxnCoordinatorRuntime", "txn_settings_from_config"]


def txn_settings_from_config(config: ServerConfig) -> TxnSettings:
    return TxnSettings(
        max_timeout_ms=config.get_int("transaction.max.timeout.ms"),
        id_expiration_ms=config.get_int("transactional.id.expiration.ms"),
        abort_check_interval_ms=config.get_int(
            "transaction.abort.timed.out.transaction.cleanup.interval.ms"
        ),
        expiration_check_interval_ms=config.get_int(
            "transaction.remove.expired.transaction.cleanup.interval.ms"
        ),
    )


class TxnReplicas(CoordinatorReplicas, MarkerWriter, Protocol):
    """The replica manager as the transaction coordinator uses it: its log, and the markers."""


class TxnCoordinatorRuntime(CoordinatorRuntime[TransactionCoordinator, TransactionLogRecord]):
    """Owns the :class:`TransactionCoordinator` of this broker and everything around it."""

    def __init__(
        self,
        *,
        config: ServerConfig,
        replica_manager: TxnReplicas,
        auto_topics: AutoTopicCreator,
        clock: Clock,
        marker_clients: BrokerClients | None = None,
        timer: Timer | None = None,
    ) -> None:
        """``marker_clients``: connections to other brokers, for their partitions' markers;
        ``timer``: what the core's timers and the markers' retries wait on."""
        super().__init__(
            topic=TRANSACTION_STATE_TOPIC,
            replica_manager=replica_manager,
            auto_topics=auto_topics,
            clock=clock,
            write_timeout_ms=config.get_int("request.timeout.ms"),
            timer=timer,
        )
        self.coordinator = TransactionCoordinator(
            settings=txn_settings_from_config(config), writer=self
        )
        self._markers = TxnMarkerChannel(
            replica_manager=replica_manager,
            clients=marker_clients,
            wait_acks=self._committed,
            request_timeout=config.get_int("request.timeout.ms") / 1000,
            timer=timer,
        )
        self._marker_tasks: set[asyncio.Task[None]] = set()

    @property
    def replica_manager(self) -> CoordinatorReplicas:
        return self._replica_manager

    # --- loading ------------------------------------------------------------------------------

    def _finish_loading(self, partition: int, leader_epoch: int) -> None:
        """Kafka's coordinator epoch is the leader epoch of the ``__transaction_state``
        partition, the one it was loaded at."""
        self.coordinator.finish_loading(
            partition, coordinator_epoch=leader_epoch, now_ms=self.now_ms()
        )

    def _replay_control(self, partition: int, header: BatchHeader, batch: bytes) -> None:
        """Nothing: no transaction writes to ``__transaction_state``, so it has no markers."""

    @staticmethod
    def _decode(key: bytes, value: bytes | None) -> TransactionLogRecord:
        return TransactionLogRecord(decode_key(key), decode_value(value))

    def _replay(self, header: BatchHeader, record: TransactionLogRecord) -> None:
        self.coordinator.replay(record)

    # --- requests -----------------------------------------------------------------------------

    def verify_produce(
        self, transactional_id: str, producer_id: int, producer_epoch: int, tp: TopicPartition
    ) -> ErrorCode | None:
        """KIP-890 verification of a transactional produce: NONE when ``tp`` is in the
        producer's Ongoing transaction, else the error; None when this broker does not
        coordinate ``transactional_id`` (no check: Kafka's leader would ask the coordinator
        with AddPartitionsToTxn v4, which strom's brokers do not send yet)."""
        coordinator = self.coordinator
        if coordinator.partition_count is None or (
            coordinator.partition_of(transactional_id) not in coordinator.owned_partitions
        ):
            return None
        [code] = self.coordinator.verify_partitions(
            transactional_id,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            partitions=[tp],
        ).values()
        return code

    # --- the core's TransactionWriter (CoordinatorRuntime.append, and markers) --------------

    @staticmethod
    def _append_error(code: ErrorCode) -> ErrorCode:
        """What the coordinator answers for a failed append (Kafka's mapping)."""
        if code in (ErrorCode.not_leader_or_follower, ErrorCode.kafka_storage_error):
            return ErrorCode.not_coordinator
        if code in (
            ErrorCode.unknown_topic_or_partition,
            ErrorCode.not_enough_replicas,
            ErrorCode.not_enough_replicas_after_append,
            ErrorCode.request_timed_out,
        ):
            return ErrorCode.coordinator_not_available
        return ErrorCode.unknown_server_error

    def write_markers(
        self,
        *,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
        partitions: Collection[TopicPartition],
        done: Callable[[], None],
    ) -> None:
        """Write the marker in every partition, wherever it is led (:mod:`strom.server.
        txn_markers`); ``done`` once each is written or given up on."""
        marker = Marker(producer_id, producer_epoch, commit, coordinator_epoch)

        async def deliver() -> None:
            await self._markers.deliver(marker, partitions)
            done()

        task = asyncio.get_running_loop().create_task(deliver())
        self._marker_tasks.add(task)
        task.add_done_callback(self._marker_tasks.discard)

    async def stop(self) -> None:
        tasks, self._marker_tasks = set(self._marker_tasks), set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self._markers.close()
        await super().stop()
