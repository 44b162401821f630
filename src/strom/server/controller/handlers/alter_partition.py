"""AlterPartition (API key 56), v2 and v3, on the controller listener: a partition leader's ISR
change (``strom.controller.isr_changes``). v2 names the ISR by broker id alone (each epoch taken
as -1, unchecked); v3 gives each member's broker epoch (KIP-841).
"""

from __future__ import annotations

import logging
from typing import Any, Final, Protocol

from kio.schema.alter_partition.v3 import response as latest
from kio.schema.types import BrokerId
from kio.static.primitive import i8, i32
from kio.static.protocol import ResponsePayload

from strom.controller import (
    AlterPartitionItem,
    AlterPartitionReply,
    AlterPartitionRequest,
    IsrChangeResult,
)
from strom.protocol.api import KAFKA_CONTROLLER_VERSIONS, ApiKey
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import for_version
from strom.server.api.throttle import NO_THROTTLE

__all__ = ["AlterPartitionHandler", "parse_alter_partition"]

log = logging.getLogger(__name__)


def parse_alter_partition(body: Any) -> AlterPartitionRequest:
    items = []
    for topic in body.topics:
        for partition in topic.partitions:
            with_epochs = getattr(partition, "new_isr_with_epochs", None)
            if with_epochs is None:  # v2: broker ids only
                isr = tuple((int(b), -1) for b in partition.new_isr)
            else:
                isr = tuple((int(m.broker_id), int(m.broker_epoch)) for m in with_epochs)
            items.append(
                AlterPartitionItem(
                    topic_id=topic.topic_id,
                    partition=int(partition.partition_index),
                    leader_epoch=int(partition.leader_epoch),
                    partition_epoch=int(partition.partition_epoch),
                    new_isr=isr,
                    leader_recovery_state=int(partition.leader_recovery_state),
                )
            )
    return AlterPartitionRequest(int(body.broker_id), int(body.broker_epoch), items)


class IsrChanger(Protocol):
    """What AlterPartition needs of the controller."""

    async def alter_partition(self, request: AlterPartitionRequest) -> AlterPartitionReply:
        """AlterPartition over the quorum; raises NotControllerError."""
        ...


class AlterPartitionHandler:
    api_key: Final = ApiKey.ALTER_PARTITION
    versions: Final = KAFKA_CONTROLLER_VERSIONS[ApiKey.ALTER_PARTITION]

    def __init__(self, controller: IsrChanger) -> None:
        self._controller = controller

    async def handle(self, context: RequestContext) -> ResponsePayload:
        request = parse_alter_partition(context.body)
        reply = await self._controller.alter_partition(request)
        for result in reply.results:
            if result.error.is_failure:
                log.info(
                    "AlterPartition from broker %d refused for %s-%d: %s",
                    request.broker_id,
                    result.topic_id,
                    result.partition,
                    result.error.message,
                )
        by_topic: dict[Any, list[IsrChangeResult]] = {}
        for result in reply.results:
            by_topic.setdefault(result.topic_id, []).append(result)
        response = latest.AlterPartitionResponse(
            throttle_time=NO_THROTTLE,
            error_code=reply.error.code,
            topics=tuple(
                latest.TopicData(
                    topic_id=topic_id,
                    partitions=tuple(_partition(result) for result in results),
                )
                for topic_id, results in by_topic.items()
            ),
        )
        return for_version(response, context.api_version)


def _partition(result: IsrChangeResult) -> latest.PartitionData:
    registration = result.registration
    return latest.PartitionData(
        partition_index=i32(result.partition),
        error_code=result.error.code,
        leader_id=BrokerId(registration.leader if registration else -1),
        leader_epoch=i32(registration.leader_epoch if registration else -1),
        isr=tuple(BrokerId(b) for b in registration.isr) if registration else (),
        leader_recovery_state=i8(registration.leader_recovery_state if registration else 0),
        partition_epoch=i32(registration.partition_epoch if registration else -1),
    )
