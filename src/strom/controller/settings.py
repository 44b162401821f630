"""What the controller needs from the server's settings, and the pluggable policies."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final

from strom.config import ServerConfig
from strom.metadata import (
    ELIGIBLE_LEADER_REPLICAS_FEATURE,
    METADATA_VERSION_FEATURE,
    BrokerFeature,
    ConfigResource,
)

__all__ = [
    "DEFAULT_METADATA_VERSION",
    "MAX_RECORDS_PER_OPERATION",
    "PRODUCER_ID_BLOCK_SIZE",
    "SUPPORTED_FEATURES",
    "AlterConfigPolicy",
    "AlterConfigPolicyRequest",
    "ControllerSettings",
    "CreateTopicPolicy",
    "CreateTopicPolicyRequest",
]

MAX_RECORDS_PER_OPERATION: Final = 10_000
"""As Kafka: one operation appends at most this many records; more is a POLICY_VIOLATION."""

PRODUCER_ID_BLOCK_SIZE: Final = 1000
"""Producer ids are handed to a broker in blocks of this many, as Kafka does."""

DEFAULT_METADATA_VERSION: Final = 14
"""Kafka's metadata.version level 14 (3.6-IV2): the newest level whose records strom writes
as Kafka does (no log-directory assignment). Eligible leader replicas have a feature of their
own (``eligible.leader.replicas.version``), as in Kafka 4.x."""

MIN_METADATA_VERSION: Final = 7
"""3.3-IV3, the oldest level whose records strom reads in full."""

SUPPORTED_FEATURES: Final = (
    BrokerFeature(METADATA_VERSION_FEATURE, MIN_METADATA_VERSION, DEFAULT_METADATA_VERSION),
    BrokerFeature(ELIGIBLE_LEADER_REPLICAS_FEATURE, 0, 1),
)
"""The feature ranges a strom broker registers with."""


@dataclass(frozen=True)
class CreateTopicPolicyRequest:
    """What a create-topic policy sees, as Kafka's ``CreateTopicPolicy.RequestMetadata``:
    either the partition and replica counts, or the manual assignments."""

    name: str
    num_partitions: int | None
    replication_factor: int | None
    assignments: Mapping[int, tuple[int, ...]] | None
    configs: Mapping[str, str]


@dataclass(frozen=True)
class AlterConfigPolicyRequest:
    """What an alter-config policy sees: the resource and the configs being changed (None for
    a deletion)."""

    resource: ConfigResource
    configs: Mapping[str, str | None]


CreateTopicPolicy = Callable[[CreateTopicPolicyRequest], str | None]
"""Returns why the topic may not be created (POLICY_VIOLATION), or None to allow it."""

AlterConfigPolicy = Callable[[AlterConfigPolicyRequest], str | None]
"""Returns why the change may not be made (POLICY_VIOLATION), or None to allow it."""


@dataclass(frozen=True)
class ControllerSettings:
    """The settings the controller reads; ``from_config`` takes them from server settings."""

    node_id: int = 1
    default_num_partitions: int = 1
    default_replication_factor: int = 1
    delete_topic_enable: bool = True
    max_records_per_operation: int = MAX_RECORDS_PER_OPERATION
    server_config: ServerConfig = field(default_factory=ServerConfig)
    """Defaults of topic settings (APPEND/SUBTRACT start from them) and broker settings."""
    create_topic_policy: CreateTopicPolicy | None = None
    alter_config_policy: AlterConfigPolicy | None = None

    @classmethod
    def from_config(
        cls,
        config: ServerConfig,
        *,
        create_topic_policy: CreateTopicPolicy | None = None,
        alter_config_policy: AlterConfigPolicy | None = None,
    ) -> ControllerSettings:
        return cls(
            node_id=config.get_int("node.id"),
            default_num_partitions=config.get_int("num.partitions"),
            default_replication_factor=config.get_int("default.replication.factor"),
            delete_topic_enable=config.get_bool("delete.topic.enable"),
            server_config=config,
            create_topic_policy=create_topic_policy,
            alter_config_policy=alter_config_policy,
        )
