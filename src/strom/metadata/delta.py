"""Metadata deltas: records replayed on top of an image, and what they changed.

``MetadataDelta(image)`` takes records one at a time (:meth:`MetadataDelta.replay`) and builds the
next image with :meth:`MetadataDelta.apply`. Its sub-deltas say what changed, so that publishers
(the log manager, caches) react to the change rather than diff two images: created and deleted
topics, new and changed partitions, changed configs and brokers.

A record that contradicts the image it is replayed on (a partition of a topic that does not exist,
a second topic with the same name, producer ids going backwards) raises
:class:`MetadataReplayError`: the controller never writes such a record, so it means the log is
corrupt or a bug, and going on would hand out a wrong image.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from strom.metadata.acls import AclsDelta, MetadataAclError
from strom.metadata.client_quotas import ClientQuotasDelta
from strom.metadata.image import (
    BrokerRegistration,
    ClusterImage,
    ConfigResource,
    ConfigurationsImage,
    FeaturesImage,
    MetadataImage,
    MetadataProvenance,
    PartitionRegistration,
    ProducerIdsImage,
    ScramImage,
    TopicImage,
    TopicsImage,
)
from strom.metadata.records import (
    AccessControlEntryRecord,
    BrokerRegistrationChangeRecord,
    ClientQuotaRecord,
    ConfigRecord,
    ConfigResourceType,
    FeatureLevelRecord,
    FenceBrokerRecord,
    FencingChange,
    MetadataRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveAccessControlEntryRecord,
    RemoveTopicRecord,
    RemoveUserScramCredentialRecord,
    TopicRecord,
    UnfenceBrokerRecord,
    UnregisterBrokerRecord,
    UserScramCredentialRecord,
)
from strom.security.scram import ScramCredential, ScramMechanism

__all__ = [
    "ClusterDelta",
    "ConfigResourceDelta",
    "ConfigurationsDelta",
    "FeaturesDelta",
    "MetadataDelta",
    "MetadataReplayError",
    "ProducerIdsDelta",
    "ScramDelta",
    "TopicDelta",
    "TopicsDelta",
]


class MetadataReplayError(ValueError):
    """A record that cannot apply to the image it was replayed on."""


class TopicDelta:
    """Changes to one topic; ``image`` is None when the topic is created in this delta."""

    def __init__(self, image: TopicImage | None, *, name: str, topic_id: uuid.UUID) -> None:
        self.image = image
        self.name = name
        self.topic_id = topic_id
        self.partition_changes: dict[int, PartitionRegistration] = {}

    @property
    def created(self) -> bool:
        return self.image is None

    def partition(self, partition_id: int) -> PartitionRegistration | None:
        """The partition as of this delta."""
        changed = self.partition_changes.get(partition_id)
        if changed is not None or self.image is None:
            return changed
        return self.image.partitions.get(partition_id)

    @property
    def new_partitions(self) -> frozenset[int]:
        """Partitions this delta added (all of them for a created topic)."""
        old = {} if self.image is None else self.image.partitions
        return frozenset(p for p in self.partition_changes if p not in old)

    @property
    def changed_partitions(self) -> frozenset[int]:
        """Partitions that existed before and changed in this delta."""
        old = {} if self.image is None else self.image.partitions
        return frozenset(p for p in self.partition_changes if p in old)

    def replay_partition(self, record: PartitionRecord) -> None:
        self.partition_changes[record.partition_id] = PartitionRegistration.from_record(record)

    def replay_change(self, record: PartitionChangeRecord) -> None:
        current = self.partition(record.partition_id)
        if current is None:
            raise MetadataReplayError(
                f"partition change for {self.name}-{record.partition_id}, which does not exist"
            )
        self.partition_changes[record.partition_id] = current.merge(record)

    def apply(self) -> TopicImage:
        partitions = dict(self.image.partitions) if self.image is not None else {}
        partitions.update(self.partition_changes)
        return TopicImage(name=self.name, topic_id=self.topic_id, partitions=partitions)


class TopicsDelta:
    """Created, deleted and changed topics."""

    def __init__(self, image: TopicsImage) -> None:
        self.image = image
        self._changed: dict[uuid.UUID, TopicDelta] = {}
        self._created: dict[str, uuid.UUID] = {}
        self._deleted: dict[uuid.UUID, TopicImage] = {}

    @property
    def has_changes(self) -> bool:
        return bool(self._changed or self._deleted)

    @property
    def changed_topics(self) -> Mapping[uuid.UUID, TopicDelta]:
        """Topics created or changed (and not deleted) in this delta, by id."""
        return MappingProxyType(self._changed)

    @property
    def created_topics(self) -> Mapping[str, uuid.UUID]:
        """Topics this delta created (name -> id); one created and deleted in it is not here."""
        return MappingProxyType(self._created)

    @property
    def deleted_topic_ids(self) -> frozenset[uuid.UUID]:
        """Topics of the previous image that this delta deleted."""
        return frozenset(self._deleted)

    @property
    def deleted_topics(self) -> Mapping[uuid.UUID, TopicImage]:
        """The deleted topics as the previous image had them (names, partitions)."""
        return MappingProxyType(self._deleted)

    def topic(self, topic_id: uuid.UUID) -> TopicImage | TopicDelta | None:
        """The topic as of this delta: its delta when changed, else its image."""
        if topic_id in self._changed:
            return self._changed[topic_id]
        if topic_id in self._deleted:
            return None
        return self.image.get_topic_by_id(topic_id)

    def _name_in_use(self, name: str) -> bool:
        if name in self._created:
            return True
        existing = self.image.get_topic(name)
        return existing is not None and existing.topic_id not in self._deleted

    def replay_topic(self, record: TopicRecord) -> None:
        if record.topic_id in self.image.topics_by_id or record.topic_id in self._changed:
            raise MetadataReplayError(f"topic id {record.topic_id} already exists")
        if self._name_in_use(record.name):
            raise MetadataReplayError(f"topic {record.name!r} already exists")
        self._changed[record.topic_id] = TopicDelta(
            None, name=record.name, topic_id=record.topic_id
        )
        self._created[record.name] = record.topic_id

    def _topic_delta(self, topic_id: uuid.UUID, what: str) -> TopicDelta:
        delta = self._changed.get(topic_id)
        if delta is not None:
            return delta
        image = None if topic_id in self._deleted else self.image.get_topic_by_id(topic_id)
        if image is None:
            raise MetadataReplayError(f"{what} for topic id {topic_id}, which does not exist")
        delta = TopicDelta(image, name=image.name, topic_id=topic_id)
        self._changed[topic_id] = delta
        return delta

    def replay_partition(self, record: PartitionRecord) -> None:
        self._topic_delta(record.topic_id, "partition record").replay_partition(record)

    def replay_partition_change(self, record: PartitionChangeRecord) -> None:
        self._topic_delta(record.topic_id, "partition change").replay_change(record)

    def replay_remove_topic(self, record: RemoveTopicRecord) -> str:
        """Remove the topic; returns its name (its configs go too)."""
        delta = self._changed.pop(record.topic_id, None)
        if delta is not None and delta.created:
            del self._created[delta.name]
            return delta.name
        image = (
            None
            if record.topic_id in self._deleted
            else self.image.get_topic_by_id(record.topic_id)
        )
        if image is None:
            raise MetadataReplayError(f"cannot remove topic id {record.topic_id}: no such topic")
        self._deleted[record.topic_id] = image
        return image.name

    def apply(self) -> TopicsImage:
        if not self.has_changes:
            return self.image
        topics = dict(self.image.topics_by_id)
        for topic_id in self._deleted:
            del topics[topic_id]
        for topic_id, delta in self._changed.items():
            topics[topic_id] = delta.apply()
        return TopicsImage(topics)


@dataclass
class ConfigResourceDelta:
    """Changes to one resource's configs: set (a string) or deleted (None), and whether all
    previous configs were dropped first (its topic was deleted)."""

    deleted_all: bool = False
    changes: dict[str, str | None] = field(default_factory=dict)


class ConfigurationsDelta:
    def __init__(self, image: ConfigurationsImage) -> None:
        self.image = image
        self._changes: dict[ConfigResource, ConfigResourceDelta] = {}

    @property
    def has_changes(self) -> bool:
        return bool(self._changes)

    @property
    def changed_configs(self) -> Mapping[ConfigResource, ConfigResourceDelta]:
        return MappingProxyType(self._changes)

    @property
    def changed_topic_names(self) -> frozenset[str]:
        """Topics whose config overrides changed (deleted topics included)."""
        return frozenset(r.name for r in self._changes if r.type is ConfigResourceType.TOPIC)

    def replay_config(self, record: ConfigRecord) -> None:
        try:
            resource_type = ConfigResourceType(record.resource_type)
        except ValueError:
            raise MetadataReplayError(
                f"config record for unknown resource type {record.resource_type}"
            ) from None
        resource = ConfigResource(resource_type, record.resource_name)
        self._changes.setdefault(resource, ConfigResourceDelta()).changes[record.name] = (
            record.value
        )

    def delete_topic_configs(self, name: str) -> None:
        resource = ConfigResource.topic(name)
        if resource in self.image.resources or resource in self._changes:
            self._changes[resource] = ConfigResourceDelta(deleted_all=True)

    def apply(self) -> ConfigurationsImage:
        if not self._changes:
            return self.image
        resources = dict(self.image.resources)
        for resource, delta in self._changes.items():
            configs = {} if delta.deleted_all else dict(resources.get(resource, {}))
            for name, value in delta.changes.items():
                if value is None:
                    configs.pop(name, None)
                else:
                    configs[name] = value
            resources[resource] = configs
        return ConfigurationsImage(resources)


class ClusterDelta:
    def __init__(self, image: ClusterImage) -> None:
        self.image = image
        self._changed: dict[int, BrokerRegistration | None] = {}

    @property
    def has_changes(self) -> bool:
        return bool(self._changed)

    @property
    def changed_brokers(self) -> Mapping[int, BrokerRegistration | None]:
        """Registered or changed brokers, None for unregistered ones."""
        return MappingProxyType(self._changed)

    def broker(self, broker_id: int) -> BrokerRegistration | None:
        if broker_id in self._changed:
            return self._changed[broker_id]
        return self.image.broker(broker_id)

    def _broker(self, broker_id: int, epoch: int, what: str) -> BrokerRegistration:
        current = self.broker(broker_id)
        if current is None:
            raise MetadataReplayError(f"{what} of broker {broker_id}, which is not registered")
        if current.epoch != epoch:
            raise MetadataReplayError(
                f"{what} of broker {broker_id} at epoch {epoch}, but its epoch is {current.epoch}"
            )
        return current

    def replay_register(self, record: RegisterBrokerRecord) -> None:
        self._changed[record.broker_id] = BrokerRegistration.from_record(record)

    def replay_unregister(self, record: UnregisterBrokerRecord) -> None:
        self._changed[record.broker_id] = None

    def replay_fence(self, record: FenceBrokerRecord | UnfenceBrokerRecord) -> None:
        fence = isinstance(record, FenceBrokerRecord)
        current = self._broker(record.id, record.epoch, "fencing" if fence else "unfencing")
        self._changed[record.id] = replace(current, fenced=fence)

    def replay_change(self, record: BrokerRegistrationChangeRecord) -> None:
        current = self._broker(record.broker_id, record.broker_epoch, "registration change")
        fenced = current.fenced
        if record.fenced == FencingChange.FENCE:
            fenced = True
        elif record.fenced == FencingChange.UNFENCE:
            fenced = False
        elif record.fenced != FencingChange.NONE:
            raise MetadataReplayError(f"unknown fencing change {record.fenced}")
        shutdown = current.in_controlled_shutdown or record.in_controlled_shutdown == 1
        log_dirs = record.log_dirs or current.log_dirs
        self._changed[record.broker_id] = replace(
            current, fenced=fenced, in_controlled_shutdown=shutdown, log_dirs=log_dirs
        )

    def apply(self) -> ClusterImage:
        if not self._changed:
            return self.image
        brokers = dict(self.image.brokers)
        for broker_id, registration in self._changed.items():
            if registration is None:
                brokers.pop(broker_id, None)
            else:
                brokers[broker_id] = registration
        return ClusterImage(brokers)


class FeaturesDelta:
    def __init__(self, image: FeaturesImage) -> None:
        self.image = image
        self._changes: dict[str, int | None] = {}

    @property
    def has_changes(self) -> bool:
        return bool(self._changes)

    @property
    def changes(self) -> Mapping[str, int | None]:
        """New levels by feature name; None for a removed feature."""
        return MappingProxyType(self._changes)

    def replay(self, record: FeatureLevelRecord) -> None:
        self._changes[record.name] = record.feature_level or None

    def apply(self) -> FeaturesImage:
        if not self._changes:
            return self.image
        levels = dict(self.image.finalized_levels)
        for name, level in self._changes.items():
            if level is None:
                levels.pop(name, None)
            else:
                levels[name] = level
        return FeaturesImage(levels)


class ProducerIdsDelta:
    def __init__(self, image: ProducerIdsImage) -> None:
        self.image = image
        self._next: ProducerIdsImage | None = None

    @property
    def has_changes(self) -> bool:
        return self._next is not None

    @property
    def next_producer_id(self) -> int:
        return (self._next or self.image).next_producer_id

    def replay(self, record: ProducerIdsRecord) -> None:
        if record.next_producer_id <= self.next_producer_id:
            raise MetadataReplayError(
                f"next producer id {record.next_producer_id} is not above "
                f"{self.next_producer_id}: ids would be handed out twice"
            )
        self._next = ProducerIdsImage(
            next_producer_id=record.next_producer_id,
            broker_id=record.broker_id,
            broker_epoch=record.broker_epoch,
        )

    def apply(self) -> ProducerIdsImage:
        return self._next or self.image


class ScramDelta:
    def __init__(self, image: ScramImage) -> None:
        self.image = image
        self._changes: dict[tuple[ScramMechanism, str], ScramCredential | None] = {}

    @property
    def has_changes(self) -> bool:
        return bool(self._changes)

    def _key(self, name: str, mechanism: int) -> tuple[ScramMechanism, str]:
        try:
            return ScramMechanism(mechanism), name
        except ValueError:
            raise MetadataReplayError(f"unknown SCRAM mechanism {mechanism}") from None

    def replay(self, record: UserScramCredentialRecord) -> None:
        self._changes[self._key(record.name, record.mechanism)] = ScramCredential(
            salt=record.salt,
            stored_key=record.stored_key,
            server_key=record.server_key,
            iterations=record.iterations,
        )

    def replay_remove(self, record: RemoveUserScramCredentialRecord) -> None:
        key = self._key(record.name, record.mechanism)
        current = self._changes[key] if key in self._changes else self.image.credentials.get(key)
        if current is None:
            raise MetadataReplayError(
                f"no {key[0].mechanism_name} credential of user {record.name} to remove"
            )
        self._changes[key] = None

    def apply(self) -> ScramImage:
        if not self._changes:
            return self.image
        credentials = dict(self.image.credentials)
        for key, credential in self._changes.items():
            if credential is None:
                credentials.pop(key, None)
            else:
                credentials[key] = credential
        return ScramImage(credentials)


class MetadataDelta:
    """Records replayed on top of ``image``; :meth:`apply` gives the next image."""

    def __init__(self, image: MetadataImage) -> None:
        self.image = image
        self.features_delta = FeaturesDelta(image.features)
        self.cluster_delta = ClusterDelta(image.cluster)
        self.topics_delta = TopicsDelta(image.topics)
        self.configs_delta = ConfigurationsDelta(image.configs)
        self.producer_ids_delta = ProducerIdsDelta(image.producer_ids)
        self.scram_delta = ScramDelta(image.scram)
        self.acls_delta = AclsDelta(image.acls)
        self.client_quotas_delta = ClientQuotasDelta(image.client_quotas)

    @property
    def has_changes(self) -> bool:
        return (
            self.features_delta.has_changes
            or self.cluster_delta.has_changes
            or self.topics_delta.has_changes
            or self.configs_delta.has_changes
            or self.producer_ids_delta.has_changes
            or self.scram_delta.has_changes
            or self.acls_delta.has_changes
            or self.client_quotas_delta.has_changes
        )

    def replay(self, record: MetadataRecord) -> None:
        match record:
            case TopicRecord():
                self.topics_delta.replay_topic(record)
            case PartitionRecord():
                self.topics_delta.replay_partition(record)
            case PartitionChangeRecord():
                self.topics_delta.replay_partition_change(record)
            case RemoveTopicRecord():
                name = self.topics_delta.replay_remove_topic(record)
                self.configs_delta.delete_topic_configs(name)
            case ConfigRecord():
                self.configs_delta.replay_config(record)
            case RegisterBrokerRecord():
                self.cluster_delta.replay_register(record)
            case UnregisterBrokerRecord():
                self.cluster_delta.replay_unregister(record)
            case FenceBrokerRecord() | UnfenceBrokerRecord():
                self.cluster_delta.replay_fence(record)
            case BrokerRegistrationChangeRecord():
                self.cluster_delta.replay_change(record)
            case FeatureLevelRecord():
                self.features_delta.replay(record)
            case ProducerIdsRecord():
                self.producer_ids_delta.replay(record)
            case UserScramCredentialRecord():
                self.scram_delta.replay(record)
            case RemoveUserScramCredentialRecord():
                self.scram_delta.replay_remove(record)
            case AccessControlEntryRecord() | RemoveAccessControlEntryRecord():
                self._replay_acl(record)
            case ClientQuotaRecord():
                self.client_quotas_delta.replay(record)
            case NoOpRecord():
                pass
            case _:  # pragma: no cover - the union above is exhaustive
                raise MetadataReplayError(f"cannot replay {record!r}")

    def _replay_acl(
        self, record: AccessControlEntryRecord | RemoveAccessControlEntryRecord
    ) -> None:
        try:
            if isinstance(record, AccessControlEntryRecord):
                self.acls_delta.replay(record)
            else:
                self.acls_delta.replay_remove(record)
        except MetadataAclError as error:
            raise MetadataReplayError(str(error)) from None

    def apply(self, provenance: MetadataProvenance | None = None) -> MetadataImage:
        """The next image; ``provenance`` defaults to the previous image's."""
        return MetadataImage(
            provenance=self.image.provenance if provenance is None else provenance,
            features=self.features_delta.apply(),
            cluster=self.cluster_delta.apply(),
            topics=self.topics_delta.apply(),
            configs=self.configs_delta.apply(),
            producer_ids=self.producer_ids_delta.apply(),
            scram=self.scram_delta.apply(),
            acls=self.acls_delta.apply(),
            client_quotas=self.client_quotas_delta.apply(),
        )
