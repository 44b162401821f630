"""What the admin and metadata handlers share: a few constants of the protocol, broker
addresses, request views and log lines. Responses for each version are built with
:mod:`strom.server.api.kio_entities`.
"""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final, TypeVar

from kio.static.primitive import i8, i32, i32Timedelta

from strom.common import ErrorCode
from strom.controller import (
    AlterConfigsResource,
    AlterConfigsResult,
    ApiError,
    IncrementalAlterConfigsResource,
)
from strom.metadata import BrokerRegistration, ConfigResourceType, MetadataImage
from strom.security.acls import CLUSTER_NAME, AclOperation, ResourceType
from strom.server.api.handler_table import RequestContext
from strom.server.api.throttle import throttle_field
from strom.server.quotas.client_quotas import (
    ControllerMutationQuota,
    ControllerMutationQuotaManager,
)

__all__ = [
    "ALL_CLUSTER_OPERATIONS",
    "ALL_GROUP_OPERATIONS",
    "ALL_TOPIC_OPERATIONS",
    "AUTHORIZED_OPERATIONS_OMITTED",
    "BrokerAddress",
    "alter_configs_results",
    "authorized_operations",
    "broker_addresses",
    "config_refusal",
    "log_config_changes",
    "mutation_quota",
    "mutation_throttle",
    "split_config_resources",
    "wire_uuid",
]

T = TypeVar("T")


def mutation_quota(
    quotas: ControllerMutationQuotaManager, context: RequestContext, *, strict_since: int
) -> ControllerMutationQuota:
    """The client's ``controller_mutation_rate`` for this request (KIP-599): strict from
    version ``strict_since`` on, permissive before."""
    strict = context.api_version >= strict_since
    return quotas.new_quota(context.user, context.client_id, strict=strict)


def mutation_throttle(quota: ControllerMutationQuota, context: RequestContext) -> i32Timedelta:
    """The answer's ``throttle_time_ms`` for the quota, the client's connection muted for it
    (a forwarded request's is muted by the broker that forwarded it)."""
    throttle_ms = quota.throttle_time_ms()
    context.throttle(throttle_ms)
    return throttle_field(throttle_ms)


AUTHORIZED_OPERATIONS_OMITTED: Final = i32(-(2**31))
"""Kafka's value of an ``*_authorized_operations`` field the client did not ask for."""


def _operations(*codes: int) -> i32:
    return i32(sum(1 << code for code in codes))


# AclOperation codes: READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9,
# DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12.
ALL_TOPIC_OPERATIONS: Final = _operations(3, 4, 5, 6, 7, 8, 10, 11)
"""Every operation Kafka defines on a topic; with no authorizer, all of them are allowed."""
ALL_CLUSTER_OPERATIONS: Final = _operations(5, 7, 8, 9, 10, 11, 12)
"""Every operation Kafka defines on the cluster; with no authorizer, all of them are allowed."""
ALL_GROUP_OPERATIONS: Final = _operations(3, 6, 8)
"""Every operation Kafka defines on a group (READ, DELETE, DESCRIBE)."""

_ALL_OPERATIONS: Final = {
    ResourceType.TOPIC: ALL_TOPIC_OPERATIONS,
    ResourceType.CLUSTER: ALL_CLUSTER_OPERATIONS,
    ResourceType.GROUP: ALL_GROUP_OPERATIONS,
}


def authorized_operations(
    context: RequestContext, resource_type: ResourceType, name: str = CLUSTER_NAME
) -> i32:
    """The ``*_authorized_operations`` bit set of what the principal may do on the resource
    (every operation of its type without an authorizer), as Kafka computes it."""
    every = _ALL_OPERATIONS[resource_type]
    if context.authorizer is None:
        return every
    allowed = [
        operation
        for operation in AclOperation
        if every >> operation & 1 and context.authorize(operation, resource_type, name, audit=False)
    ]
    return _operations(*allowed)


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerAddress:
    """A broker as Metadata and DescribeCluster list it."""

    node_id: int
    host: str
    port: int
    rack: str | None
    fenced: bool


def broker_addresses(
    image: MetadataImage, listener_name: str, *, include_fenced: bool = False
) -> list[BrokerAddress]:
    """The brokers with an endpoint on ``listener_name`` (the one the client came in on), by
    id; fenced ones only when asked (Kafka lists only unfenced brokers to clients)."""
    addresses: list[BrokerAddress] = []
    for broker_id in sorted(image.cluster.brokers):
        broker: BrokerRegistration = image.cluster.brokers[broker_id]
        endpoint = broker.endpoint(listener_name)
        if endpoint is None or (broker.fenced and not include_fenced):
            continue
        addresses.append(
            BrokerAddress(broker_id, endpoint.host, endpoint.port, broker.rack, broker.fenced)
        )
    return addresses


def wire_uuid(value: uuid.UUID | None) -> uuid.UUID | None:
    """A topic id as kio carries it: the zero UUID (Kafka's "no id") is None, as kio decodes it."""
    return None if value is None or value.int == 0 else value


def resource_label(resource_type: int, name: str) -> str:
    """``topic orders``, ``broker 1``, ``cluster-wide broker defaults``, for log lines."""
    if resource_type == ConfigResourceType.TOPIC:
        return f"topic {name}"
    if resource_type == ConfigResourceType.BROKER:
        return f"broker {name}" if name else "cluster-wide broker defaults"
    return f"resource type {resource_type} {name!r}"


def log_config_changes(
    log: logging.Logger,
    *,
    api: str,
    client: str,
    results: Sequence[AlterConfigsResult],
    changes: Mapping[tuple[int, str], str],
    validate_only: bool,
) -> None:
    """One line per resource: what changed, or why not; ``changes`` describes each request."""
    for result in results:
        label = resource_label(result.resource_type, result.resource_name)
        change = changes.get((result.resource_type, result.resource_name), "")
        if result.error.is_failure:
            log.info(
                "%s from %s: %s not changed: %s (%s)",
                api,
                client,
                label,
                result.error.message,
                result.error.code.name.upper(),
            )
        elif validate_only:
            log.info("%s from %s: %s: %s would be valid", api, client, label, change)
        else:
            log.info("configs of %s changed: %s", label, change)


def alter_configs_results(
    entry: Callable[..., T], results: Sequence[AlterConfigsResult]
) -> tuple[T, ...]:
    """The per-resource answers of AlterConfigs and IncrementalAlterConfigs, whose entry classes
    (``AlterConfigsResourceResponse`` of each) have the same fields."""
    return tuple(
        entry(
            error_code=result.error.code,
            error_message=result.error.message if result.error.is_failure else None,
            resource_type=i8(result.resource_type),
            resource_name=result.resource_name,
        )
        for result in results
    )


_CONFIG_RESOURCES: Final[Mapping[int, tuple[ResourceType, ErrorCode]]] = {
    ConfigResourceType.TOPIC: (ResourceType.TOPIC, ErrorCode.topic_authorization_failed),
    ConfigResourceType.GROUP: (ResourceType.GROUP, ErrorCode.group_authorization_failed),
}


def config_refusal(
    context: RequestContext, resource_type: int, name: str, operation: AclOperation
) -> ErrorCode | None:
    """Kafka's check of a config resource: ``operation`` on the topic or group, or on the
    cluster for the others (brokers, loggers); the error to answer, None when allowed."""
    if context.authorizer is None:
        return None
    acl_type, error = _CONFIG_RESOURCES.get(
        resource_type, (ResourceType.CLUSTER, ErrorCode.cluster_authorization_failed)
    )
    name = name if acl_type is not ResourceType.CLUSTER else CLUSTER_NAME
    return None if context.authorize(operation, acl_type, name) else error


ConfigResourceT = TypeVar("ConfigResourceT", AlterConfigsResource, IncrementalAlterConfigsResource)


def split_config_resources(
    context: RequestContext, resources: Sequence[ConfigResourceT]
) -> tuple[list[ConfigResourceT], list[AlterConfigsResult]]:
    """The resources an alter request may change (ALTER_CONFIGS), and the others' refusals."""
    allowed: list[ConfigResourceT] = []
    refused: list[AlterConfigsResult] = []
    for resource in resources:
        name, kind = resource.resource_name, resource.resource_type
        error = config_refusal(context, kind, name, AclOperation.ALTER_CONFIGS)
        if error is None:
            allowed.append(resource)
        else:
            refused.append(AlterConfigsResult(kind, name, ApiError(error)))
    return allowed, refused


def refused_config_results(
    resources: Iterable[AlterConfigsResource | IncrementalAlterConfigsResource], code: ErrorCode
) -> list[AlterConfigsResult]:
    """Every resource of an AlterConfigs or IncrementalAlterConfigs request refused with
    ``code`` (the controller was not reached)."""
    return [AlterConfigsResult(r.resource_type, r.resource_name, ApiError(code)) for r in resources]
