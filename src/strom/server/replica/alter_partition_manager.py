"""A leader's ISR changes, sent to the active controller as AlterPartition (Kafka's
``AlterPartitionManager``).

The replica manager proposes one change per partition at a time (KIP-497); this module sends
it as AlterPartition v3 (each ISR member with the broker epoch its latest fetch was sent in,
KIP-903, the leader with its own; and the partition epoch the change is based on) and reports
the answer back: the committed ISR and partition epoch, or an error. A controller that does not
answer within ``timeout`` seconds has answered nothing: it may have committed the change, so
the change is sent again, with a backoff, until an answer or the metadata settles it (the
replica manager decides, Kafka's ``handleAlterPartitionError``). Requests go through an
:class:`AlterPartitionChannel` (the ``ControllerChannel`` in a broker) and backoffs run on a
``Timer`` (the event loop's in a broker), so a simulation runs this on virtual time.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from typing import Final, Protocol

from kio.schema.alter_partition.v3.request import (
    AlterPartitionRequest,
    BrokerState,
    PartitionData,
    TopicData,
)
from kio.schema.alter_partition.v3.response import AlterPartitionResponse
from kio.schema.types import BrokerId
from kio.static.primitive import i8, i32, i64

from strom.common import ErrorCode, TopicPartition
from strom.common.timer import LoopTimer, Timer, sleep
from strom.metadata import LeaderRecoveryState
from strom.replication.partition_replication import IsrChange
from strom.server.channel.controller_channel import ControllerUnavailable
from strom.server.replica.replica_manager import ReplicaManager

__all__ = ["AlterPartitionChannel", "AlterPartitionManager"]

log = logging.getLogger(__name__)

RETRY_BACKOFF_MS: Final = 50
"""The first wait before a change is sent again (Kafka's AlterPartitionManager waits 50 ms),
doubled at each try up to ``RETRY_BACKOFF_MAX_MS``."""
RETRY_BACKOFF_MAX_MS: Final = 1000


class AlterPartitionChannel(Protocol):
    """The way to the active controller (``ControllerChannel``)."""

    async def send(self, body: AlterPartitionRequest, *, timeout: float) -> AlterPartitionResponse:
        """The controller's answer; raises :class:`ControllerUnavailable` after ``timeout``
        seconds without one."""
        ...


class AlterPartitionManager:
    """Sends the replica manager's ISR changes and reports their outcome."""

    def __init__(
        self,
        *,
        node_id: int,
        broker_epoch: Callable[[], int],
        channel: AlterPartitionChannel,
        replica_manager: ReplicaManager,
        timeout: float,
        timer: Timer | None = None,
    ) -> None:
        """``timer``: what backoffs run on (the event loop's by default)."""
        self._timer = timer or LoopTimer()
        self._node_id = node_id
        self._broker_epoch = broker_epoch
        self._channel = channel
        self._replica_manager = replica_manager
        self._timeout = timeout
        self._tasks: set[asyncio.Task[None]] = set()

    def send(self, tp: TopicPartition, leader_epoch: int, change: IsrChange) -> None:
        """Send ``change`` in the background (the replica manager's ``isr_change_sender``)."""
        task = asyncio.get_running_loop().create_task(self._send(tp, leader_epoch, change))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send(self, tp: TopicPartition, leader_epoch: int, change: IsrChange) -> None:
        """Send ``change`` until an answer settles it: a change the controller may have
        committed is never given up (see :meth:`PartitionReplication.isr_change_failed`)."""
        backoff = RETRY_BACKOFF_MS
        while self._settle(tp, leader_epoch, change, await self._ask(tp, leader_epoch, change)):
            await sleep(self._timer, backoff)
            backoff = min(backoff * 2, RETRY_BACKOFF_MAX_MS)

    async def _ask(
        self, tp: TopicPartition, leader_epoch: int, change: IsrChange
    ) -> AlterPartitionResponse | ErrorCode | None:
        """The controller's answer, the error that stands for one, or None when none came."""
        topic = self._replica_manager.image.topics.get_topic(tp.topic)
        if topic is None:
            return ErrorCode.unknown_topic_or_partition
        try:
            response: AlterPartitionResponse = await self._channel.send(
                self._request(topic.topic_id, tp, leader_epoch, change), timeout=self._timeout
            )
        except ControllerUnavailable as unavailable:
            log.warning("ISR change of %s not answered (sent again): %s", tp, unavailable)
            return None
        return response

    def _settle(
        self,
        tp: TopicPartition,
        leader_epoch: int,
        change: IsrChange,
        answer: AlterPartitionResponse | ErrorCode | None,
    ) -> bool:
        """Report ``answer`` to the replica manager; whether to send the change again."""
        manager = self._replica_manager
        if not isinstance(answer, AlterPartitionResponse):
            return manager.isr_change_done(
                tp, leader_epoch=leader_epoch, change=change, isr=None, error=answer
            )
        error = ErrorCode(answer.error_code)
        answers = [p for t in answer.topics for p in t.partitions]
        if error == ErrorCode.none and answers:
            error = ErrorCode(answers[0].error_code)
        if error != ErrorCode.none or not answers:
            log.info("the controller refused the ISR change of %s: %s", tp, error.name.upper())
            return manager.isr_change_done(
                tp, leader_epoch=leader_epoch, change=change, isr=None, error=error
            )
        isr = tuple(int(broker_id) for broker_id in answers[0].isr)
        partition_epoch = int(answers[0].partition_epoch)
        log.info("%s: ISR is now %s (partition epoch %d)", tp, list(isr), partition_epoch)
        return manager.isr_change_done(
            tp, leader_epoch=leader_epoch, change=change, isr=isr, partition_epoch=partition_epoch
        )

    def _request(
        self, topic_id: uuid.UUID, tp: TopicPartition, leader_epoch: int, change: IsrChange
    ) -> AlterPartitionRequest:
        own_epoch = self._broker_epoch()
        return AlterPartitionRequest(
            broker_id=BrokerId(self._node_id),
            broker_epoch=i64(own_epoch),
            topics=(
                TopicData(
                    topic_id=topic_id,
                    partitions=(
                        PartitionData(
                            partition_index=i32(tp.partition),
                            leader_epoch=i32(leader_epoch),
                            new_isr_with_epochs=tuple(
                                BrokerState(
                                    broker_id=BrokerId(broker_id),
                                    broker_epoch=i64(
                                        own_epoch if broker_id == self._node_id else epoch
                                    ),
                                )
                                for broker_id, epoch in zip(
                                    change.isr, change.broker_epochs, strict=True
                                )
                            ),
                            # KIP-704: a leader elected uncleanly has nothing to recover here
                            # (as Kafka's makeLeader), so its ISR changes say RECOVERED.
                            leader_recovery_state=i8(LeaderRecoveryState.RECOVERED),
                            partition_epoch=i32(change.partition_epoch),
                        ),
                    ),
                ),
            ),
        )

    async def stop(self) -> None:
        tasks, self._tasks = set(self._tasks), set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
