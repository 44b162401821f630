"""Creating topics on demand, as Kafka's ``AutoTopicCreationManager``.

Metadata requests create unknown topics when ``auto.create.topics.enable`` is on and the request
allows it; FindCoordinator creates ``__consumer_offsets`` and ``__transaction_state`` the same
way. A normal topic gets ``num.partitions`` partitions and ``default.replication.factor``
replicas; the internal ``__consumer_offsets`` gets the ``offsets.topic.*`` settings and Kafka's
configs for it (compacted, ``compression.type=producer``), ``__transaction_state`` the
``transaction.state.log.*`` settings and Kafka's configs (compacted, uncompressed, no unclean
leader election).

Kafka sends the CreateTopics to the controller and answers LEADER_NOT_AVAILABLE until the
topic exists; here the controller is in-process and commits before answering, so the caller
can answer with the created topic at once (clients need no retry round trip).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

from strom.common import ErrorCode
from strom.controller import (
    ApiError,
    CreatableTopic,
    CreateTopicsRequest,
)
from strom.controller.topic_names import GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC, is_internal
from strom.server.controller_server import ControllerServer
from strom.server.log_configs import TopicConfigResolver

__all__ = ["AutoTopicCreator"]

log = logging.getLogger(__name__)


class AutoTopicCreator:
    def __init__(self, controller: ControllerServer, configs: TopicConfigResolver) -> None:
        self._controller = controller
        self._configs = configs

    @property
    def enabled(self) -> bool:
        """``auto.create.topics.enable`` as of now (a dynamic broker setting may change it)."""
        server = self._configs.server_config(self._controller.image)
        return server.get_bool("auto.create.topics.enable")

    async def create(self, names: Sequence[str]) -> Mapping[str, ApiError]:
        """Create the topics; the outcome per name (success, or why not)."""
        server = self._configs.server_config(self._controller.image)
        topics: list[CreatableTopic] = []
        outcome: dict[str, ApiError] = {}
        for name in dict.fromkeys(names):
            if name == GROUP_METADATA_TOPIC:
                topics.append(
                    CreatableTopic(
                        name=name,
                        num_partitions=server.get_int("offsets.topic.num.partitions"),
                        replication_factor=server.get_int("offsets.topic.replication.factor"),
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
                        replication_factor=server.get_int(
                            "transaction.state.log.replication.factor"
                        ),
                        configs={
                            "cleanup.policy": "compact",
                            "compression.type": "uncompressed",
                            "unclean.leader.election.enable": "false",
                            "min.insync.replicas": str(
                                server.get_int("transaction.state.log.min.isr")
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
            results = await self._controller.create_topics(CreateTopicsRequest(topics))
            for result in results:
                outcome[result.name] = result.error
                if result.error.is_success:
                    log.info(
                        "auto-created topic %s with %d partition(s), replication factor %d "
                        "(topic id %s)",
                        result.name,
                        result.num_partitions,
                        result.replication_factor,
                        result.topic_id,
                    )
                else:
                    log.warning(
                        "cannot auto-create topic %s: %s",
                        result.name,
                        result.error.message or result.error.code.name,
                    )
        return outcome
