"""A leader's ISR changes, sent to the active controller as AlterPartition (Kafka's
``AlterPartitionManager``).

The replica manager proposes one change per partition at a time (KIP-497); this module sends
it as AlterPartition v3 (each ISR member with the broker epoch its latest fetch was sent in,
KIP-903, the leader with its own; and the partition epoch the change is based on) and reports
the answer back: the committed ISR and partition epoch, or a failure, after which the leader
proposes again at its next check from fresh state.
A controller that does not answer within ``timeout`` seconds counts as a failure.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from kio.schema.alter_partition.v3.request import (
    AlterPartitionRequest,
    BrokerState,
    PartitionData,
    TopicData,
)
from kio.schema.types import BrokerId
from kio.static.primitive import i8, i32, i64

from strom.common import ErrorCode, TopicPartition
from strom.server.controller_channel import ControllerChannel, ControllerUnavailable
from strom.server.partition_replication import IsrChange
from strom.server.replica_manager import ReplicaManager

__all__ = ["AlterPartitionManager"]

log = logging.getLogger(__name__)


class AlterPartitionManager:
    """Sends the replica manager's ISR changes and reports their outcome."""

    def __init__(
        self,
        *,
        node_id: int,
        broker_epoch: Callable[[], int],
        channel: ControllerChannel,
        replica_manager: ReplicaManager,
        timeout: float,
    ) -> None:
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
        manager = self._replica_manager
        image = manager.image
        topic = image.topics.get_topic(tp.topic)
        if topic is None:
            manager.isr_change_done(tp, leader_epoch=leader_epoch, isr=None)
            return
        own_epoch = self._broker_epoch()
        request = AlterPartitionRequest(
            broker_id=BrokerId(self._node_id),
            broker_epoch=i64(own_epoch),
            topics=(
                TopicData(
                    topic_id=topic.topic_id,
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
                            leader_recovery_state=i8(0),
                            partition_epoch=i32(change.partition_epoch),
                        ),
                    ),
                ),
            ),
        )
        try:
            response = await self._channel.send(request, timeout=self._timeout)
        except ControllerUnavailable as unavailable:
            log.warning("ISR change of %s not sent: %s", tp, unavailable)
            manager.isr_change_done(tp, leader_epoch=leader_epoch, isr=None)
            return
        error = ErrorCode(response.error_code)
        answers = [p for t in response.topics for p in t.partitions]
        if error == ErrorCode.none and answers:
            error = ErrorCode(answers[0].error_code)
        if error != ErrorCode.none:
            log.info("the controller refused the ISR change of %s: %s", tp, error.name.upper())
            manager.isr_change_done(tp, leader_epoch=leader_epoch, isr=None)
            return
        answer = answers[0]
        isr = tuple(int(broker_id) for broker_id in answer.isr)
        log.info("%s: ISR is now %s (partition epoch %d)", tp, list(isr), answer.partition_epoch)
        manager.isr_change_done(
            tp,
            leader_epoch=leader_epoch,
            isr=isr,
            partition_epoch=int(answer.partition_epoch),
        )

    async def stop(self) -> None:
        tasks, self._tasks = set(self._tasks), set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
