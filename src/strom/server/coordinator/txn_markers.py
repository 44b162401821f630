"""Delivering a transaction's COMMIT or ABORT markers to its partitions, wherever they are led
(Kafka's ``TransactionMarkerChannelManager``).

:meth:`TxnMarkerChannel.deliver` groups the partitions by their leader in the current metadata:
a partition led here gets its marker through the replica manager directly, one led by another
broker through a WriteTxnMarkers request to it (``clients``: connections to the brokers'
inter-broker listener). A marker counts as written once every in-sync replica has it (the
remote broker answers only then; a local one waits for the high watermark). A partition that
cannot take it now (no leader, led elsewhere, too few replicas, a timeout, a lost connection)
is tried again after :data:`MARKER_RETRY_BACKOFF_MS` with the leader the metadata names then; a
deleted partition, a newer producer epoch or coordinator epoch is given up on, as in Kafka. The
backoff waits on a Timer (the event loop's, or a simulation's virtual time).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass
from typing import Final, Protocol

from kio.schema.types import ProducerId, TopicName
from kio.schema.write_txn_markers.v1.request import (
    WritableTxnMarker,
    WritableTxnMarkerTopic,
    WriteTxnMarkersRequest,
)
from kio.static.primitive import i16, i32

from strom.client.async_client import RequestFailed
from strom.common import ErrorCode, TopicPartition
from strom.common.timer import LoopTimer, Timer, sleep
from strom.metadata import MetadataImage
from strom.server.replica.replica_fetcher import BrokerClients

__all__ = [
    "MARKER_RETRY_BACKOFF_MAX_MS",
    "MARKER_RETRY_BACKOFF_MS",
    "Marker",
    "MarkerWriter",
    "TxnMarkerChannel",
]

log = logging.getLogger(__name__)

MARKER_RETRY_BACKOFF_MS: Final = 100
"""Kafka's ``retry.backoff.ms`` default for the coordinator's marker requests: the first wait
before a retry, doubled at each retry of the same markers up to ``MARKER_RETRY_BACKOFF_MAX_MS``
(``retry.backoff.max.ms``, KIP-580), so that an outage of several replicas is not met with ten
requests a second per transaction."""
MARKER_RETRY_BACKOFF_MAX_MS: Final = 1_000

_RETRIABLE: Final = frozenset(
    {
        ErrorCode.not_leader_or_follower,
        ErrorCode.not_enough_replicas,
        ErrorCode.not_enough_replicas_after_append,
        ErrorCode.request_timed_out,
        ErrorCode.kafka_storage_error,
        ErrorCode.unknown_server_error,
    }
)

AckWaiter = Callable[[TopicPartition, int], Awaitable[ErrorCode]]
"""``await wait(tp, offset)``: the acks=all outcome of a local write ending before ``offset``."""


@dataclass(frozen=True, slots=True)
class Marker:
    """What one transaction's markers say."""

    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int

    @property
    def kind(self) -> str:
        return "COMMIT" if self.commit else "ABORT"


class MarkerWriter(Protocol):
    """What the marker channel needs of the replica manager: who leads what, and the markers
    of the partitions led here."""

    @property
    def node_id(self) -> int: ...

    @property
    def image(self) -> MetadataImage: ...

    def write_txn_marker(
        self,
        tp: TopicPartition,
        *,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        coordinator_epoch: int,
    ) -> ErrorCode: ...

    def log_end_offset(self, tp: TopicPartition) -> int: ...


class TxnMarkerChannel:
    """Writes markers to local and remote partition leaders (see the module doc)."""

    def __init__(
        self,
        *,
        replica_manager: MarkerWriter,
        clients: BrokerClients | None,
        wait_acks: AckWaiter,
        request_timeout: float = 30.0,
        timer: Timer | None = None,
    ) -> None:
        """``timer``: what the retry backoff waits on (the event loop's by default)."""
        self._replica_manager = replica_manager
        self._clients = clients
        self._wait_acks = wait_acks
        self._request_timeout = request_timeout
        self._timer = timer or LoopTimer()

    async def close(self) -> None:
        if self._clients is not None:
            await self._clients.close()

    async def deliver(self, marker: Marker, partitions: Collection[TopicPartition]) -> None:
        """Return once every partition has the marker or was given up on."""
        pending = sorted(partitions)
        backoff_ms = MARKER_RETRY_BACKOFF_MS
        while True:
            by_leader: dict[int, list[TopicPartition]] = {}
            image = self._replica_manager.image
            for tp in pending:
                registration = image.topics.get_partition(tp)
                if registration is None:
                    log.warning(
                        "%s marker for producer id %d on %s given up: the partition is gone",
                        marker.kind,
                        marker.producer_id,
                        tp,
                    )
                    continue
                by_leader.setdefault(registration.leader, []).append(tp)
            outcomes: dict[TopicPartition, ErrorCode] = {}
            for answered in await asyncio.gather(
                *(self._write(leader, marker, tps) for leader, tps in by_leader.items())
            ):
                outcomes.update(answered)
            retry = []
            for tp, code in outcomes.items():
                if code in _RETRIABLE:
                    retry.append(tp)
                elif code is not ErrorCode.none:
                    log.warning(
                        "%s marker for producer id %d on %s given up: %s",
                        marker.kind,
                        marker.producer_id,
                        tp,
                        code.name.upper(),
                    )
            if not retry:
                return
            log.info(
                "%s marker for producer id %d: retrying %s", marker.kind, marker.producer_id, retry
            )
            pending = sorted(retry)
            await sleep(self._timer, backoff_ms)
            backoff_ms = min(backoff_ms * 2, MARKER_RETRY_BACKOFF_MAX_MS)

    async def _write(
        self, leader: int, marker: Marker, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, ErrorCode]:
        manager = self._replica_manager
        if leader < 0:
            return dict.fromkeys(partitions, ErrorCode.not_leader_or_follower)
        if leader == manager.node_id:
            return await self._write_here(marker, partitions)
        if self._clients is None:
            return dict.fromkeys(partitions, ErrorCode.not_leader_or_follower)
        topics: dict[str, list[int]] = {}
        for tp in partitions:
            topics.setdefault(tp.topic, []).append(tp.partition)
        request = WriteTxnMarkersRequest(
            markers=(
                WritableTxnMarker(
                    producer_id=ProducerId(marker.producer_id),
                    producer_epoch=i16(marker.producer_epoch),
                    transaction_result=marker.commit,
                    topics=tuple(
                        WritableTxnMarkerTopic(
                            name=TopicName(name),
                            partition_indexes=tuple(i32(index) for index in indexes),
                        )
                        for name, indexes in topics.items()
                    ),
                    coordinator_epoch=i32(marker.coordinator_epoch),
                ),
            )
        )
        try:
            response = await self._clients.request(leader, request, timeout=self._request_timeout)
        except RequestFailed as error:
            log.info("%s markers to broker %d not delivered: %s", marker.kind, leader, error)
            return dict.fromkeys(partitions, ErrorCode.not_leader_or_follower)
        return {
            TopicPartition(str(topic.name), int(answer.partition_index)): ErrorCode(
                answer.error_code
            )
            for result in response.markers
            for topic in result.topics
            for answer in topic.partitions
        }

    async def _write_here(
        self, marker: Marker, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, ErrorCode]:
        manager = self._replica_manager
        written: dict[TopicPartition, ErrorCode] = {}
        waits: dict[TopicPartition, Awaitable[ErrorCode]] = {}
        for tp in partitions:
            code = manager.write_txn_marker(
                tp,
                producer_id=marker.producer_id,
                producer_epoch=marker.producer_epoch,
                commit=marker.commit,
                coordinator_epoch=marker.coordinator_epoch,
            )
            if code is ErrorCode.none:
                waits[tp] = self._wait_acks(tp, manager.log_end_offset(tp))
            written[tp] = code
        for tp, outcome in zip(waits, await asyncio.gather(*waits.values()), strict=True):
            written[tp] = outcome
        return written
