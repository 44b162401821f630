"""Partition leaders, ISRs and eligible leader replicas as brokers come and go: the elections
Kafka's controller makes when a broker is fenced, re-registers or is unfenced
(``ReplicationControlManager``'s ``generateLeaderAndIsrUpdates``), each partition's change
worked out by :mod:`strom.controller.partition_change`.

* A broker that becomes unavailable (fenced, or starting a new session) leaves the ISR of every
  partition that has it; a partition it led gets the first replica, in replica order, that is in
  the remaining ISR and on an active broker. Below ``min.insync.replicas`` the replicas that
  leave the ISR become eligible leader replicas (KIP-966); a broker back from an unclean
  shutdown (its registration does not name its last broker epoch: it may have lost unflushed
  records) leaves the ELR too.
* A broker that becomes available again leads each leaderless partition it may lead without
  losing committed records: from the ISR, from the ELR, or as the last known leader.
* A topic with ``unclean.leader.election.enable`` elects from any replica when no clean choice
  is left, as Kafka's controller does.
* A new leader bumps the leader epoch; any change bumps the partition epoch
  (``PartitionRegistration.merge``).

``elect_leaders`` is the ElectLeaders API (``kafka-leader-election.sh``): a *preferred*
election gives each partition back to its first replica when that replica may lead cleanly; an
*unclean* one gives a leaderless partition to a clean choice, or failing that to any replica on
an active broker, which may lose committed records.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass

from strom.common import ErrorCode, TopicPartition
from strom.config import ConfigError, ServerConfig, TopicConfig
from strom.controller.partition_change import Election, ElectionRules, partition_change
from strom.controller.results import NO_ERROR, ApiError, ControllerResult
from strom.metadata import (
    ELIGIBLE_LEADER_REPLICAS_FEATURE,
    NO_LEADER,
    MetadataImage,
    PartitionChangeRecord,
    PartitionRegistration,
    TopicImage,
)

__all__ = [
    "ElectLeadersRequest",
    "ElectionPolicy",
    "ElectionResult",
    "ElectionType",
    "active_brokers",
    "broker_available",
    "broker_unavailable",
    "elect_leaders",
]


def active_brokers(image: MetadataImage) -> Callable[[int], bool]:
    def active(broker_id: int) -> bool:
        broker = image.cluster.broker(broker_id)
        return broker is not None and broker.active

    return active


class ElectionPolicy:
    """How the partitions of one image change: which brokers may lead, each topic's effective
    ``min.insync.replicas`` and ``unclean.leader.election.enable``, whether the cluster keeps
    eligible leader replicas (the ``eligible.leader.replicas.version`` feature)."""

    def __init__(
        self,
        image: MetadataImage,
        defaults: ServerConfig,
        *,
        acceptable: Callable[[int], bool] | None = None,
        unclean_shutdown: Collection[int] = (),
    ) -> None:
        self._image = image
        self._acceptable = active_brokers(image) if acceptable is None else acceptable
        self._unclean_shutdown = unclean_shutdown
        levels = image.features.finalized_levels
        self.elr_enabled = levels.get(ELIGIBLE_LEADER_REPLICAS_FEATURE, 0) >= 1
        try:
            self._server = defaults.with_overrides(dict(image.configs.broker_configs()))
        except ConfigError:
            self._server = defaults
        self._topics: dict[str, TopicConfig] = {}

    def topic_config(self, topic: str) -> TopicConfig:
        config = self._topics.get(topic)
        if config is None:
            try:
                config = TopicConfig(self._server, self._image.topic_configs(topic))
            except ConfigError:
                config = TopicConfig(self._server, {})
            self._topics[topic] = config
        return config

    def change(
        self,
        topic: TopicImage,
        partition_id: int,
        partition: PartitionRegistration,
        *,
        isr: tuple[int, ...] | None = None,
        election: Election | None = None,
        recovery: int | None = None,
    ) -> PartitionChangeRecord | None:
        """The partition's change to the target ``isr`` and leader recovery state
        ``recovery``; ``election`` defaults to the topic's (unclean when
        ``unclean.leader.election.enable`` is set)."""
        config = self.topic_config(topic.name)
        if election is None:
            unclean = config["unclean.leader.election.enable"] is True
            election = Election.UNCLEAN if unclean else Election.ONLINE
        rules = ElectionRules(
            acceptable=self._acceptable,
            min_isr=min(config.get_int("min.insync.replicas"), len(partition.replicas)),
            elr_enabled=self.elr_enabled,
            unclean_shutdown=self._unclean_shutdown,
        )
        return partition_change(
            topic.topic_id,
            partition_id,
            partition,
            rules,
            isr=isr,
            election=election,
            recovery=recovery,
        )


def _partitions(image: MetadataImage) -> Iterator[tuple[TopicImage, int, PartitionRegistration]]:
    for topic in image.topics.topics_by_id.values():
        for partition_id, partition in sorted(topic.partitions.items()):
            yield topic, partition_id, partition


def broker_unavailable(
    image: MetadataImage, defaults: ServerConfig, broker_id: int, *, unclean_shutdown: bool = False
) -> list[PartitionChangeRecord]:
    """The broker is fenced or starts a new session: out of every ISR, leaders moved away;
    after an unclean shutdown out of every ELR as well."""
    active = active_brokers(image)
    policy = ElectionPolicy(
        image,
        defaults,
        acceptable=lambda b: b != broker_id and active(b),
        unclean_shutdown=(broker_id,) if unclean_shutdown else (),
    )
    records = []
    for topic, partition_id, partition in _partitions(image):
        in_elr = unclean_shutdown and broker_id in partition.eligible_leader_replicas
        if broker_id not in partition.isr and partition.leader != broker_id and not in_elr:
            continue
        isr = tuple(b for b in partition.isr if b != broker_id)
        record = policy.change(topic, partition_id, partition, isr=isr)
        if record is not None:
            records.append(record)
    return records


def broker_available(
    image: MetadataImage, defaults: ServerConfig, broker_id: int
) -> list[PartitionChangeRecord]:
    """The broker is unfenced: leaderless partitions it may lead get it."""
    active = active_brokers(image)
    policy = ElectionPolicy(image, defaults, acceptable=lambda b: b == broker_id or active(b))
    records = []
    for topic, partition_id, partition in _partitions(image):
        if partition.leader != NO_LEADER or broker_id not in partition.replicas:
            continue
        record = policy.change(topic, partition_id, partition)
        if record is not None:
            records.append(record)
    return records


class ElectionType(enum.IntEnum):
    """ElectLeaders' election types, numbered as on the wire."""

    PREFERRED = 0
    UNCLEAN = 1


@dataclass(frozen=True)
class ElectLeadersRequest:
    election_type: ElectionType
    partitions: Sequence[TopicPartition] | None
    """None: every partition of every topic."""


@dataclass(frozen=True, slots=True)
class ElectionResult:
    partition: TopicPartition
    error: ApiError = NO_ERROR


def elect_leaders(
    image: MetadataImage, defaults: ServerConfig, request: ElectLeadersRequest
) -> ControllerResult[list[ElectionResult]]:
    """ElectLeaders: a result per partition asked for; asked for all, only the partitions an
    election was made or failed for (Kafka leaves out ELECTION_NOT_NEEDED then)."""
    policy = ElectionPolicy(image, defaults)
    records: list[PartitionChangeRecord] = []
    results: list[ElectionResult] = []
    wanted = request.partitions
    if wanted is None:
        wanted = [
            TopicPartition(topic.name, partition_id)
            for topic in image.topics.topics_by_id.values()
            for partition_id in sorted(topic.partitions)
        ]
    for tp in dict.fromkeys(wanted):
        topic = image.topics.get_topic(tp.topic)
        partition = None if topic is None else topic.partitions.get(tp.partition)
        if topic is None or partition is None:
            error = ApiError(ErrorCode.unknown_topic_or_partition, f"{tp} does not exist")
        else:
            record, error = _election(policy, request.election_type, topic, tp, partition)
            if record is not None:
                records.append(record)
        if request.partitions is not None or error.code is not ErrorCode.election_not_needed:
            results.append(ElectionResult(tp, error))
    return ControllerResult(records, results)


def _election(
    policy: ElectionPolicy,
    election_type: ElectionType,
    topic: TopicImage,
    tp: TopicPartition,
    partition: PartitionRegistration,
) -> tuple[PartitionChangeRecord | None, ApiError]:
    """The partition's change (None: none) and its result."""
    if election_type is ElectionType.PREFERRED:
        preferred = partition.replicas[0]
        if partition.leader == preferred:
            return None, ApiError(ErrorCode.election_not_needed, "the preferred replica leads")
        record = policy.change(topic, tp.partition, partition, election=Election.PREFERRED)
        if record is not None and record.leader == preferred:
            return record, NO_ERROR
        return None, ApiError(
            ErrorCode.preferred_leader_not_available,
            f"preferred replica {preferred} is not in the ISR or not on an active broker",
        )
    if partition.leader != NO_LEADER:
        return None, ApiError(ErrorCode.election_not_needed, "the partition has a leader")
    record = policy.change(topic, tp.partition, partition, election=Election.UNCLEAN)
    if record is not None and record.leader >= 0:
        return record, NO_ERROR
    return None, ApiError(
        ErrorCode.eligible_leaders_not_available, "no replica is on an active broker"
    )
