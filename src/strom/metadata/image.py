"""The metadata image: the cluster's metadata at one offset of the metadata log, immutable.

Request handlers read a ``MetadataImage`` and never change it; a new image comes from applying a
:class:`~strom.metadata.delta.MetadataDelta` to the previous one. Every mapping in an image is a
read-only view (``MappingProxyType``) over a dict that nothing else holds, and every sequence is
a tuple, so an image can be shared freely. Sub-images that a delta does not touch are reused as
they are by the next image.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TypeVar

from strom.common import TopicPartition
from strom.metadata.acls import AclsImage
from strom.metadata.client_quotas import ClientQuotasImage
from strom.metadata.records import (
    METADATA_VERSION_FEATURE,
    NO_LEADER,
    NO_LEADER_CHANGE,
    BrokerEndpoint,
    BrokerFeature,
    ConfigRecord,
    ConfigResourceType,
    FeatureLevelRecord,
    LeaderRecoveryState,
    MetadataRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    TopicRecord,
    UserScramCredentialRecord,
)
from strom.security.scram import ScramCredential, ScramMechanism

__all__ = [
    "BrokerRegistration",
    "ClusterImage",
    "ConfigResource",
    "ConfigurationsImage",
    "FeaturesImage",
    "MetadataImage",
    "MetadataProvenance",
    "PartitionRegistration",
    "ProducerIdsImage",
    "ScramImage",
    "TopicImage",
    "TopicsImage",
]

_K = TypeVar("_K")
_V = TypeVar("_V")


def readonly(mapping: Mapping[_K, _V]) -> Mapping[_K, _V]:
    """A read-only view of a private copy (no copy when it already is such a view)."""
    if isinstance(mapping, MappingProxyType):
        return mapping
    return MappingProxyType(dict(mapping))


@dataclass(frozen=True, slots=True)
class MetadataProvenance:
    """Where an image comes from: the offset and epoch of the last record applied to it."""

    offset: int = -1
    epoch: int = -1


@dataclass(frozen=True, slots=True)
class PartitionRegistration:
    """A partition as the controller registered it: replicas, ISR, leader and epochs."""

    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    leader_recovery_state: int = LeaderRecoveryState.RECOVERED
    directories: tuple[uuid.UUID, ...] = ()
    eligible_leader_replicas: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()

    @property
    def has_leader(self) -> bool:
        return self.leader != NO_LEADER

    @classmethod
    def from_record(cls, record: PartitionRecord) -> PartitionRegistration:
        return cls(
            replicas=record.replicas,
            isr=record.isr,
            leader=record.leader,
            leader_epoch=record.leader_epoch,
            partition_epoch=record.partition_epoch,
            removing_replicas=record.removing_replicas,
            adding_replicas=record.adding_replicas,
            leader_recovery_state=record.leader_recovery_state,
            directories=record.directories,
            eligible_leader_replicas=record.eligible_leader_replicas or (),
            last_known_elr=record.last_known_elr or (),
        )

    def merge(self, change: PartitionChangeRecord) -> PartitionRegistration:
        """This registration with a change applied; a new leader bumps the leader epoch."""
        leader, leader_epoch = self.leader, self.leader_epoch
        if change.leader != NO_LEADER_CHANGE:
            leader, leader_epoch = change.leader, self.leader_epoch + 1
        recovery = self.leader_recovery_state
        if change.leader_recovery_state != LeaderRecoveryState.NO_CHANGE:
            recovery = change.leader_recovery_state
        return PartitionRegistration(
            replicas=self.replicas if change.replicas is None else change.replicas,
            isr=self.isr if change.isr is None else change.isr,
            leader=leader,
            leader_epoch=leader_epoch,
            partition_epoch=self.partition_epoch + 1,
            removing_replicas=_pick(self.removing_replicas, change.removing_replicas),
            adding_replicas=_pick(self.adding_replicas, change.adding_replicas),
            leader_recovery_state=recovery,
            directories=_pick(self.directories, change.directories),
            eligible_leader_replicas=_pick(
                self.eligible_leader_replicas, change.eligible_leader_replicas
            ),
            last_known_elr=_pick(self.last_known_elr, change.last_known_elr),
        )

    def to_record(self, topic_id: uuid.UUID, partition_id: int) -> PartitionRecord:
        return PartitionRecord(
            partition_id=partition_id,
            topic_id=topic_id,
            replicas=self.replicas,
            isr=self.isr,
            leader=self.leader,
            leader_epoch=self.leader_epoch,
            partition_epoch=self.partition_epoch,
            removing_replicas=self.removing_replicas,
            adding_replicas=self.adding_replicas,
            leader_recovery_state=self.leader_recovery_state,
            directories=self.directories,
            eligible_leader_replicas=self.eligible_leader_replicas or None,
            last_known_elr=self.last_known_elr or None,
        )


_T = TypeVar("_T")


def _pick(current: _T, new: _T | None) -> _T:
    return current if new is None else new


@dataclass(frozen=True)
class TopicImage:
    name: str
    topic_id: uuid.UUID
    partitions: Mapping[int, PartitionRegistration]

    def __post_init__(self) -> None:
        object.__setattr__(self, "partitions", readonly(self.partitions))

    @property
    def num_partitions(self) -> int:
        return len(self.partitions)

    def leader(self, partition: int) -> int | None:
        """The partition's leader, NO_LEADER (-1) when it has none, None when no such partition."""
        registration = self.partitions.get(partition)
        return None if registration is None else registration.leader

    def records(self) -> Iterator[MetadataRecord]:
        yield TopicRecord(name=self.name, topic_id=self.topic_id)
        for partition_id in sorted(self.partitions):
            yield self.partitions[partition_id].to_record(self.topic_id, partition_id)


@dataclass(frozen=True)
class TopicsImage:
    """All topics, by id and by name."""

    topics_by_id: Mapping[uuid.UUID, TopicImage] = field(default_factory=dict)
    topics_by_name: Mapping[str, TopicImage] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_id = readonly(self.topics_by_id)
        by_name = {topic.name: topic for topic in by_id.values()}
        if len(by_name) != len(by_id):
            raise ValueError("two topics in one image share a name")
        object.__setattr__(self, "topics_by_id", by_id)
        object.__setattr__(self, "topics_by_name", MappingProxyType(by_name))

    def __len__(self) -> int:
        return len(self.topics_by_id)

    def __contains__(self, name: object) -> bool:
        return name in self.topics_by_name

    def get_topic(self, name: str) -> TopicImage | None:
        return self.topics_by_name.get(name)

    def get_topic_by_id(self, topic_id: uuid.UUID) -> TopicImage | None:
        return self.topics_by_id.get(topic_id)

    def partitions(self, name: str) -> Mapping[int, PartitionRegistration]:
        """The topic's partitions; empty when there is no such topic."""
        topic = self.topics_by_name.get(name)
        return MappingProxyType({}) if topic is None else topic.partitions

    def get_partition(self, tp: TopicPartition) -> PartitionRegistration | None:
        topic = self.topics_by_name.get(tp.topic)
        return None if topic is None else topic.partitions.get(tp.partition)

    def leader(self, tp: TopicPartition) -> int | None:
        """The leader, NO_LEADER (-1) when it has none, None when no such partition."""
        registration = self.get_partition(tp)
        return None if registration is None else registration.leader

    def replicas_on(
        self, broker_id: int
    ) -> Iterator[tuple[TopicImage, int, PartitionRegistration]]:
        """Every partition that has a replica on the broker: (topic, partition id, registration)."""
        for topic in self.topics_by_id.values():
            for partition_id, registration in topic.partitions.items():
                if broker_id in registration.replicas:
                    yield topic, partition_id, registration


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """A registered broker: its session epoch, listeners, rack and whether it is fenced."""

    id: int
    epoch: int
    incarnation_id: uuid.UUID
    endpoints: tuple[BrokerEndpoint, ...]
    rack: str | None = None
    fenced: bool = True
    in_controlled_shutdown: bool = False
    features: tuple[BrokerFeature, ...] = ()
    log_dirs: tuple[uuid.UUID, ...] = ()

    @property
    def active(self) -> bool:
        """Unfenced and not shutting down: may lead partitions and be in their ISR."""
        return not self.fenced and not self.in_controlled_shutdown

    def endpoint(self, listener_name: str) -> BrokerEndpoint | None:
        return next((ep for ep in self.endpoints if ep.name == listener_name), None)

    @classmethod
    def from_record(cls, record: RegisterBrokerRecord) -> BrokerRegistration:
        return cls(
            id=record.broker_id,
            epoch=record.broker_epoch,
            incarnation_id=record.incarnation_id,
            endpoints=record.endpoints,
            rack=record.rack,
            fenced=record.fenced,
            in_controlled_shutdown=record.in_controlled_shutdown,
            features=record.features,
            log_dirs=record.log_dirs,
        )

    def to_record(self) -> RegisterBrokerRecord:
        return RegisterBrokerRecord(
            broker_id=self.id,
            incarnation_id=self.incarnation_id,
            broker_epoch=self.epoch,
            endpoints=self.endpoints,
            features=self.features,
            rack=self.rack,
            fenced=self.fenced,
            in_controlled_shutdown=self.in_controlled_shutdown,
            log_dirs=self.log_dirs,
        )


@dataclass(frozen=True)
class ClusterImage:
    """The registered brokers."""

    brokers: Mapping[int, BrokerRegistration] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "brokers", readonly(self.brokers))

    def broker(self, broker_id: int) -> BrokerRegistration | None:
        return self.brokers.get(broker_id)

    def active_broker_ids(self) -> tuple[int, ...]:
        return tuple(sorted(b.id for b in self.brokers.values() if b.active))

    def active_broker_epochs(self) -> dict[int, int]:
        """Each active broker's id and the epoch it is registered in."""
        return {b.id: b.epoch for b in self.brokers.values() if b.active}


@dataclass(frozen=True, slots=True, order=True)
class ConfigResource:
    """A resource with configs: a topic (by name), a broker (its id, "" for the cluster) or a
    group (by id)."""

    type: ConfigResourceType
    name: str

    @classmethod
    def topic(cls, name: str) -> ConfigResource:
        return cls(ConfigResourceType.TOPIC, name)

    @classmethod
    def broker(cls, broker_id: int | None = None) -> ConfigResource:
        """A broker's own configs, or with no id the cluster-wide broker defaults."""
        return cls(ConfigResourceType.BROKER, "" if broker_id is None else str(broker_id))

    @classmethod
    def group(cls, group_id: str) -> ConfigResource:
        return cls(ConfigResourceType.GROUP, group_id)


@dataclass(frozen=True)
class ConfigurationsImage:
    """Dynamic config overrides, as the strings ConfigRecords carry; resources without any are
    absent."""

    resources: Mapping[ConfigResource, Mapping[str, str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(
            self,
            "resources",
            MappingProxyType(
                {res: readonly(configs) for res, configs in self.resources.items() if configs}
            ),
        )

    def configs(self, resource: ConfigResource) -> Mapping[str, str]:
        return self.resources.get(resource, MappingProxyType({}))

    def topic_configs(self, name: str) -> Mapping[str, str]:
        """The topic's overrides (name -> value string); empty when it has none."""
        return self.configs(ConfigResource.topic(name))

    def broker_configs(self, broker_id: int | None = None) -> Mapping[str, str]:
        return self.configs(ConfigResource.broker(broker_id))

    def records(self) -> Iterator[ConfigRecord]:
        for resource in sorted(self.resources):
            for name, value in sorted(self.resources[resource].items()):
                yield ConfigRecord(resource.type, resource.name, name, value)


@dataclass(frozen=True)
class FeaturesImage:
    """Finalized feature levels (``metadata.version`` among them)."""

    finalized_levels: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "finalized_levels", readonly(self.finalized_levels))

    @property
    def metadata_version(self) -> int | None:
        return self.finalized_levels.get(METADATA_VERSION_FEATURE)

    def records(self) -> Iterator[FeatureLevelRecord]:
        # metadata.version first: it says how to read what follows.
        names = sorted(self.finalized_levels, key=lambda n: (n != METADATA_VERSION_FEATURE, n))
        for name in names:
            yield FeatureLevelRecord(name=name, feature_level=self.finalized_levels[name])


@dataclass(frozen=True, slots=True)
class ProducerIdsImage:
    """The first producer id of the next block to hand out (0 before any was)."""

    next_producer_id: int = 0
    broker_id: int = -1
    broker_epoch: int = -1

    def records(self) -> Iterator[ProducerIdsRecord]:
        if self.next_producer_id > 0:
            yield ProducerIdsRecord(
                broker_id=self.broker_id,
                broker_epoch=self.broker_epoch,
                next_producer_id=self.next_producer_id,
            )


@dataclass(frozen=True)
class ScramImage:
    """Users' SCRAM credentials, by (mechanism, user name)."""

    credentials: Mapping[tuple[ScramMechanism, str], ScramCredential] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "credentials", readonly(self.credentials))

    def credential(self, mechanism: ScramMechanism, user: str) -> ScramCredential | None:
        return self.credentials.get((mechanism, user))

    def mechanisms_of(self, user: str) -> dict[ScramMechanism, int]:
        """The user's mechanisms and their iteration counts (empty: no credential)."""
        return {
            mechanism: credential.iterations
            for (mechanism, name), credential in sorted(self.credentials.items())
            if name == user
        }

    def records(self) -> Iterator[UserScramCredentialRecord]:
        for (mechanism, user), credential in sorted(self.credentials.items()):
            yield UserScramCredentialRecord(
                name=user,
                mechanism=mechanism,
                salt=credential.salt,
                stored_key=credential.stored_key,
                server_key=credential.server_key,
                iterations=credential.iterations,
            )


@dataclass(frozen=True)
class MetadataImage:
    """Everything the metadata log says, as of ``provenance.offset``."""

    provenance: MetadataProvenance = MetadataProvenance()
    features: FeaturesImage = FeaturesImage()
    cluster: ClusterImage = ClusterImage()
    topics: TopicsImage = TopicsImage()
    configs: ConfigurationsImage = ConfigurationsImage()
    producer_ids: ProducerIdsImage = ProducerIdsImage()
    scram: ScramImage = ScramImage()
    acls: AclsImage = field(default_factory=AclsImage)
    client_quotas: ClientQuotasImage = field(default_factory=ClientQuotasImage)

    @classmethod
    def empty(cls) -> MetadataImage:
        return _EMPTY

    @property
    def highest_offset(self) -> int:
        """Offset of the last record applied; -1 for an image no record made."""
        return self.provenance.offset

    @property
    def is_empty(self) -> bool:
        """True when no record has changed anything (whatever the offset)."""
        return replace(self, provenance=_EMPTY.provenance) == _EMPTY

    def topic(self, name: str) -> TopicImage | None:
        return self.topics.get_topic(name)

    def topic_configs(self, name: str) -> Mapping[str, str]:
        return self.configs.topic_configs(name)

    def leader(self, tp: TopicPartition) -> int | None:
        return self.topics.leader(tp)

    def records(self) -> Iterator[MetadataRecord]:
        """Records that rebuild this image from an empty one (a snapshot's contents)."""
        yield from self.features.records()
        for broker_id in sorted(self.cluster.brokers):
            yield self.cluster.brokers[broker_id].to_record()
        for topic in sorted(self.topics.topics_by_id.values(), key=lambda t: t.name):
            yield from topic.records()
        yield from self.configs.records()
        yield from self.producer_ids.records()
        yield from self.scram.records()
        yield from self.acls.records()
        yield from self.client_quotas.records()


_EMPTY = MetadataImage()
