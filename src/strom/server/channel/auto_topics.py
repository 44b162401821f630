"""Creating topics on demand, as Kafka's ``AutoTopicCreationManager``.

Metadata requests create unknown topics when ``auto.create.topics.enable`` is on and the request
allows it; FindCoordinator creates ``__consumer_offsets`` and ``__transaction_state`` the same
way. A normal topic gets ``num.partitions`` partitions and ``default.replication.factor``
replicas; the internal ``__consumer_offsets`` gets the ``offsets.topic.*`` settings and Kafka's
configs for it (compacted, ``compression.type=producer``), ``__transaction_state`` the
``transaction.state.log.*`` settings and Kafka's configs (compacted, uncompressed, no unclean
leader election).

The internal topics' replication factors default to Kafka's (3, and ``transaction.state.log.
min.isr`` 2); a cluster with fewer usable brokers than that (registered and not shutting down:
those the controller may place replicas on, fenced or not) gets one replica per broker (and a
min ISR no larger than that), with a warning, where Kafka would refuse until enough brokers
joined: a single-node broker works out of the box, a three-broker cluster is replicated as
Kafka's. A broker that is only fenced for now (restarting, or not yet seen unfenced in this
broker's metadata) still counts, as in Kafka's placement: it gets its replica and catches up.
Counting only the unfenced brokers would create the topic under-replicated for good, e.g.
``__consumer_offsets`` with two replicas and ``min.insync.replicas=2``, where the loss of
either broker stops every group write.

The CreateTopics goes to the active controller inside an Envelope (the
:class:`~strom.server.channel.controller_channel.ControllerChannel`), as Kafka's brokers send it;
then
this broker waits (briefly) until its own metadata has the new topics, so that the caller can
answer with them at once instead of LEADER_NOT_AVAILABLE and a client retry.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Mapping, Sequence
from typing import Final

from kio.schema.create_topics.v7 import request as wire
from kio.schema.types import TopicName
from kio.static.primitive import i16, i32, i32Timedelta

from strom.common import ErrorCode
from strom.controller import ApiError, CreatableTopic
from strom.controller.placement import usable_brokers
from strom.controller.topic_names import GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC, is_internal
from strom.server.api.metadata_view import MetadataView, MetadataWaiter
from strom.server.channel.controller_channel import (
    ControllerChannel,
    ControllerUnavailable,
    EnvelopeRefused,
)
from strom.server.configs.log_configs import TopicConfigResolver

__all__ = ["AutoTopicCreator"]

log = logging.getLogger(__name__)


CREATE_TIMEOUT: Final = 30.0
"""How long a creation may wait for the active controller."""
VISIBLE_TIMEOUT: Final = 5.0
"""How long to wait for a created topic to reach this broker's metadata."""


class AutoTopicCreator:
    def __init__(
        self,
        channel: ControllerChannel,
        metadata: MetadataView,
        waiter: MetadataWaiter,
        configs: TopicConfigResolver,
    ) -> None:
        self._channel = channel
        self._metadata = metadata
        self._waiter = waiter
        self._configs = configs

    @property
    def enabled(self) -> bool:
        """``auto.create.topics.enable`` as of now (a dynamic broker setting may change it)."""
        server = self._configs.server_config(self._metadata.image)
        return server.get_bool("auto.create.topics.enable")

    async def create(self, names: Sequence[str]) -> Mapping[str, ApiError]:
        """Create the topics; the outcome per name (success, or why not)."""
        server = self._configs.server_config(self._metadata.image)
        topics: list[CreatableTopic] = []
        outcome: dict[str, ApiError] = {}
        for name in dict.fromkeys(names):
            if name == GROUP_METADATA_TOPIC:
                topics.append(
                    CreatableTopic(
                        name=name,
                        num_partitions=server.get_int("offsets.topic.num.partitions"),
                        replication_factor=self._internal_replicas(
                            name, server.get_int("offsets.topic.replication.factor")
                        ),
                        configs={
                            "cleanup.policy": "compact",
                            "compression.type": "producer",
                            "segment.bytes": str(server.get_int("offsets.topic.segment.bytes")),
                        },
                    )
                )
            elif name == TRANSACTION_STATE_TOPIC:
                topics.append(
                    CreatableTopic(
                        name=name,
                        num_partitions=server.get_int("transaction.state.log.num.partitions"),
                        replication_factor=(
                            replicas := self._internal_replicas(
                                name, server.get_int("transaction.state.log.replication.factor")
                            )
                        ),
                        configs={
                            "cleanup.policy": "compact",
                            "compression.type": "uncompressed",
                            "unclean.leader.election.enable": "false",
                            "min.insync.replicas": str(
                                min(server.get_int("transaction.state.log.min.isr"), replicas)
                            ),
                            "segment.bytes": str(
                                server.get_int("transaction.state.log.segment.bytes")
                            ),
                        },
                    )
                )
            elif is_internal(name):
                outcome[name] = ApiError(
                    ErrorCode.unknown_topic_or_partition,
                    f"internal topic {name} is created by its coordinator",
                )
            else:
                topics.append(
                    CreatableTopic(
                        name=name,
                        num_partitions=server.get_int("num.partitions"),
                        replication_factor=server.get_int("default.replication.factor"),
                    )
                )
        if topics:
            outcome.update(await self._create(topics))
        return outcome

    def _internal_replicas(self, name: str, configured: int) -> int:
        """The configured replication factor, at most the usable brokers, fenced ones included
        (see the module doc)."""
        usable = len(usable_brokers(self._metadata.image.cluster))
        if 0 < usable < configured:
            log.warning(
                "creating %s with %d replica(s): the cluster has %d usable broker(s), fewer "
                "than its replication factor %d",
                name,
                usable,
                usable,
                configured,
            )
            return usable
        return configured

    async def _create(self, topics: list[CreatableTopic]) -> dict[str, ApiError]:
        request = wire.CreateTopicsRequest(
            topics=tuple(
                wire.CreatableTopic(
                    name=TopicName(topic.name),
                    num_partitions=i32(topic.num_partitions),
                    replication_factor=i16(topic.replication_factor),
                    assignments=(),
                    configs=tuple(
                        wire.CreatableTopicConfig(name=name, value=value)
                        for name, value in topic.configs.items()
                    ),
                )
                for topic in topics
            ),
            timeout=i32Timedelta.parse(datetime.timedelta(seconds=CREATE_TIMEOUT)),
            validate_only=False,
        )
        try:
            response = await self._channel.forward(request, timeout=CREATE_TIMEOUT)
        except (ControllerUnavailable, EnvelopeRefused) as error:
            log.warning("cannot auto-create %s: %s", ", ".join(t.name for t in topics), error)
            return {t.name: ApiError(ErrorCode.request_timed_out, str(error)) for t in topics}
        outcome: dict[str, ApiError] = {}
        for result in response.topics:
            code = ErrorCode(result.error_code)
            outcome[result.name] = ApiError(code, result.error_message)
            if code is ErrorCode.none:
                log.info(
                    "auto-created topic %s with %d partition(s), replication factor %d",
                    result.name,
                    result.num_partitions,
                    result.replication_factor,
                )
            elif code is not ErrorCode.topic_already_exists:
                log.warning(
                    "cannot auto-create topic %s: %s",
                    result.name,
                    result.error_message or code.name,
                )
        # A concurrent creation (clients send Metadata twice) may have won: wait for it too.
        created = [
            name
            for name, error in outcome.items()
            if error.is_success or error.code is ErrorCode.topic_already_exists
        ]
        await self._waiter.wait_for(
            lambda image: all(image.topic(name) is not None for name in created), VISIBLE_TIMEOUT
        )
        return outcome
