"""Dynamic configs of topics, brokers and groups: IncrementalAlterConfigs and (legacy)
AlterConfigs.

Overrides are kept as the strings clients sent, one ConfigRecord per changed key (a None value
deletes it); the image then holds each resource's overrides. Validation looks at the whole
resulting set of a resource, so a change is accepted only when the resource ends up valid. A
group's settings (``strom.config.group_config``) are checked against the broker's bounds; the
group need not exist (Kafka keeps them by group id).

Error codes as Kafka uses them: malformed requests (a resource or a key twice, a missing value,
an unknown operation or resource type, a broker name that is not an id) are INVALID_REQUEST;
unknown settings and bad values are INVALID_CONFIG; a missing topic is
UNKNOWN_TOPIC_OR_PARTITION; a policy's refusal is POLICY_VIOLATION. Kafka answers a broker
setting that cannot change at runtime with INVALID_REQUEST (KAFKA-13609 calls that a mistake);
strom says INVALID_CONFIG, like any other invalid value.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial

from strom.common import ErrorCode, KafkaError
from strom.config import SERVER_SETTINGS, TOPIC_SETTINGS, ConfigError, ConfigType, Setting
from strom.config import validate_topic_configs as _validate_topic_configs
from strom.config.group_config import GROUP_SETTINGS, validate_group_configs
from strom.controller.results import NO_ERROR, ApiError, ControllerResult
from strom.controller.settings import AlterConfigPolicyRequest, ControllerSettings
from strom.controller.topic_names import invalid_topic_reason
from strom.metadata import (
    ConfigRecord,
    ConfigResource,
    ConfigResourceType,
    MetadataImage,
    PartitionChangeRecord,
)

__all__ = [
    "AlterConfigOp",
    "AlterConfigsRequest",
    "AlterConfigsResource",
    "AlterConfigsResult",
    "AlterableConfig",
    "ConfigControl",
    "ConfigEntry",
    "IncrementalAlterConfigsRequest",
    "IncrementalAlterConfigsResource",
    "check_topic_configs",
]


class AlterConfigOp(enum.IntEnum):
    """IncrementalAlterConfigs operations, numbered as on the wire."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@dataclass(frozen=True, slots=True)
class AlterableConfig:
    name: str
    value: str | None
    op: int = AlterConfigOp.SET


@dataclass(frozen=True)
class IncrementalAlterConfigsResource:
    resource_type: int
    resource_name: str
    configs: Sequence[AlterableConfig]


@dataclass(frozen=True)
class IncrementalAlterConfigsRequest:
    resources: Sequence[IncrementalAlterConfigsResource]
    validate_only: bool = False


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    name: str
    value: str | None


@dataclass(frozen=True)
class AlterConfigsResource:
    """A resource's complete new set of overrides: every override not listed is removed."""

    resource_type: int
    resource_name: str
    configs: Sequence[ConfigEntry]


@dataclass(frozen=True)
class AlterConfigsRequest:
    resources: Sequence[AlterConfigsResource]
    validate_only: bool = False


@dataclass(frozen=True, slots=True)
class AlterConfigsResult:
    resource_type: int
    resource_name: str
    error: ApiError = NO_ERROR


def check_topic_configs(configs: Mapping[str, str]) -> None:
    """Raise KafkaError(INVALID_CONFIG) unless every name is a topic setting with a valid value."""
    try:
        _validate_topic_configs(configs)
    except ConfigError as error:
        raise KafkaError(ErrorCode.invalid_config, str(error)) from None


def _invalid_request(message: str) -> KafkaError:
    return KafkaError(ErrorCode.invalid_request, message)


def _invalid_config(message: str) -> KafkaError:
    return KafkaError(ErrorCode.invalid_config, message)


def _check_unique_names(names: Sequence[str]) -> None:
    repeated = sorted(name for name, count in Counter(names).items() if count > 1)
    if repeated:
        raise _invalid_request(f"config {repeated[0]!r} is given more than once")


_Change = tuple[dict[str, str], dict[str, str | None]]
"""The resource's new overrides, and what the request changed (for the policy)."""


class ConfigControl:
    def __init__(self, settings: ControllerSettings) -> None:
        self._settings = settings

    def incremental_alter_configs(
        self, image: MetadataImage, request: IncrementalAlterConfigsRequest
    ) -> ControllerResult[list[AlterConfigsResult]]:
        """Apply SET/DELETE/APPEND/SUBTRACT operations to each resource's overrides."""
        items = [
            (r.resource_type, r.resource_name, partial(self._incremental, r.configs, image))
            for r in request.resources
        ]
        return self._alter(image, items, validate_only=request.validate_only)

    def alter_configs(
        self, image: MetadataImage, request: AlterConfigsRequest
    ) -> ControllerResult[list[AlterConfigsResult]]:
        """Replace each resource's overrides with the given set (Kafka's legacy API)."""
        items = [
            (r.resource_type, r.resource_name, partial(self._replace, r.configs))
            for r in request.resources
        ]
        return self._alter(image, items, validate_only=request.validate_only)

    def _alter(
        self,
        image: MetadataImage,
        items: Sequence[tuple[int, str, Callable[[ConfigResource], _Change]]],
        *,
        validate_only: bool,
    ) -> ControllerResult[list[AlterConfigsResult]]:
        counts = Counter((resource_type, name) for resource_type, name, _ in items)
        records: list[ConfigRecord] = []
        results: list[AlterConfigsResult] = []
        for resource_type, resource_name, compute in items:
            try:
                if counts[(resource_type, resource_name)] > 1:
                    raise _invalid_request("the resource appears more than once in the request")
                resource = self._check_resource(image, resource_type, resource_name)
                new, changed = compute(resource)
                self._validate(resource, new, changed)
                self._check_policy(resource, changed)
                resource_records = _diff(resource, image.configs.configs(resource), new)
                if len(records) + len(resource_records) > self._settings.max_records_per_operation:
                    raise KafkaError(
                        ErrorCode.policy_violation,
                        "the request changes too many configs for one operation",
                    )
            except KafkaError as error:
                results.append(AlterConfigsResult(resource_type, resource_name, ApiError.of(error)))
                continue
            records.extend(resource_records)
            results.append(AlterConfigsResult(resource_type, resource_name))
        if validate_only:
            return ControllerResult([], results)
        return ControllerResult([*records, *_clear_eligible_leaders(image, records)], results)

    def _check_resource(
        self, image: MetadataImage, resource_type: int, name: str
    ) -> ConfigResource:
        if resource_type == ConfigResourceType.TOPIC:
            if not name:
                raise _invalid_request("a topic config resource needs a topic name")
            reason = invalid_topic_reason(name)
            if reason is not None:
                raise KafkaError(ErrorCode.invalid_topic_exception, reason)
            if image.topics.get_topic(name) is None:
                raise KafkaError(
                    ErrorCode.unknown_topic_or_partition, f"topic {name!r} does not exist"
                )
            return ConfigResource.topic(name)
        if resource_type == ConfigResourceType.BROKER:
            if not name:
                return ConfigResource.broker()
            if not (name.isascii() and name.isdigit()):
                raise _invalid_request(f"a broker resource is named by a broker id, not {name!r}")
            broker_id = int(name)
            if image.cluster.broker(broker_id) is None and broker_id != self._settings.node_id:
                raise KafkaError(
                    ErrorCode.broker_id_not_registered, f"no broker with id {broker_id}"
                )
            return ConfigResource.broker(broker_id)
        if resource_type == ConfigResourceType.GROUP:
            if not name:
                raise _invalid_request("a group config resource needs a group id")
            return ConfigResource.group(name)
        raise _invalid_request(f"configs of resource type {resource_type} cannot be altered")

    def _incremental(
        self,
        configs: Sequence[AlterableConfig],
        image: MetadataImage,
        resource: ConfigResource,
    ) -> _Change:
        _check_unique_names([c.name for c in configs])
        new = dict(image.configs.configs(resource))
        changed: dict[str, str | None] = {}
        for config in configs:
            try:
                op = AlterConfigOp(config.op)
            except ValueError:
                raise _invalid_request(f"unknown config operation {config.op}") from None
            if op is AlterConfigOp.DELETE:
                new.pop(config.name, None)
                changed[config.name] = None
                continue
            if config.value is None:
                raise _invalid_request(f"{op.name} of config {config.name!r} needs a value")
            if op is AlterConfigOp.SET:
                new[config.name] = config.value
            else:
                new[config.name] = self._edit_list(resource, config.name, op, config.value, new)
            changed[config.name] = new[config.name]
        return new, changed

    def _edit_list(
        self,
        resource: ConfigResource,
        name: str,
        op: AlterConfigOp,
        value: str,
        current: Mapping[str, str],
    ) -> str:
        setting = self._setting(resource, name)
        if setting.type is not ConfigType.LIST:
            raise _invalid_config(f"cannot {op.name} to {name}: it is not a list setting")
        base = current.get(name)
        if base is None:
            base = self._default(resource, setting) or ""
        items = [item.strip() for item in base.split(",") if item.strip()]
        values = [item.strip() for item in value.split(",") if item.strip()]
        if op is AlterConfigOp.APPEND:
            for item in values:
                if item not in items:
                    items.append(item)
        else:
            items = [item for item in items if item not in values]
        return ",".join(items)

    def _replace(self, configs: Sequence[ConfigEntry], resource: ConfigResource) -> _Change:
        _check_unique_names([c.name for c in configs])
        new: dict[str, str] = {}
        for config in configs:
            if config.value is None:
                raise _invalid_request(f"config {config.name!r} needs a value")
            new[config.name] = config.value
        return new, dict(new)

    def _setting(self, resource: ConfigResource, name: str) -> Setting:
        if resource.type is ConfigResourceType.TOPIC:
            topic_setting = TOPIC_SETTINGS.get(name)
            if topic_setting is None:
                raise _invalid_config(f"{name}: unknown topic setting")
            return topic_setting
        if resource.type is ConfigResourceType.GROUP:
            group_setting = GROUP_SETTINGS.get(name)
            if group_setting is None:
                raise _invalid_config(f"{name}: unknown group config name")
            return group_setting
        setting = SERVER_SETTINGS.get(name)
        if setting is None:
            raise _invalid_config(f"{name}: unknown broker setting")
        return setting

    def _default(self, resource: ConfigResource, setting: Setting) -> str | None:
        server = self._settings.server_config
        if resource.type is ConfigResourceType.TOPIC:
            return setting.render(server.topic_default(setting.name))
        return setting.render(server[setting.name])

    def _validate(
        self, resource: ConfigResource, new: Mapping[str, str], changed: Mapping[str, str | None]
    ) -> None:
        if resource.type is ConfigResourceType.TOPIC:
            check_topic_configs(new)
            return
        if resource.type is ConfigResourceType.GROUP:
            try:
                validate_group_configs(new, self._settings.server_config)
            except ConfigError as error:
                raise _invalid_config(str(error)) from None
            return
        for name, value in changed.items():
            if value is None:
                continue
            setting = self._setting(resource, name)
            if setting.read_only:
                raise _invalid_config(f"{name} cannot change while the broker runs")
            if setting.per_broker and not resource.name:
                raise _invalid_config(
                    f"{name} is set per broker, not cluster-wide: name the broker's id"
                )
            try:
                setting.parse(value)
            except ConfigError as error:
                raise _invalid_config(str(error)) from None

    def _check_policy(self, resource: ConfigResource, changed: Mapping[str, str | None]) -> None:
        policy = self._settings.alter_config_policy
        if policy is None:
            return
        reason = policy(AlterConfigPolicyRequest(resource=resource, configs=dict(changed)))
        if reason is not None:
            raise KafkaError(ErrorCode.policy_violation, reason)


def _diff(
    resource: ConfigResource, current: Mapping[str, str], new: Mapping[str, str]
) -> list[ConfigRecord]:
    return [
        ConfigRecord(resource.type, resource.name, name, new.get(name))
        for name in sorted(set(current) | set(new))
        if current.get(name) != new.get(name)
    ]


def _clear_eligible_leaders(
    image: MetadataImage, records: Sequence[ConfigRecord]
) -> list[PartitionChangeRecord]:
    """As Kafka's controller (its ClearElrRecord): a topic whose ``min.insync.replicas``
    changes, every topic when the cluster default does, forgets its eligible leader replicas
    and last known leaders, which were chosen under the old value."""
    topics: set[str] | None = set()
    for record in records:
        if record.name != "min.insync.replicas":
            continue
        if record.resource_type == ConfigResourceType.TOPIC and topics is not None:
            topics.add(record.resource_name)
        elif record.resource_type == ConfigResourceType.BROKER and not record.resource_name:
            topics = None  # the cluster-wide default
    if topics is not None and not topics:
        return []
    return [
        PartitionChangeRecord(
            partition_id=partition_id,
            topic_id=topic.topic_id,
            eligible_leader_replicas=(),
            last_known_elr=(),
        )
        for topic in image.topics.topics_by_id.values()
        if topics is None or topic.name in topics
        for partition_id, partition in sorted(topic.partitions.items())
        if partition.eligible_leader_replicas or partition.last_known_elr
    ]
