"""What the admin and metadata handlers share: a few constants of the protocol, broker
addresses, topic ids and the ACL check of config resources. Responses for each version are
built with :mod:`strom.server.api.kio_entities`.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Mapping
from typing import Final

from kio.static.primitive import i32

from strom.common import ErrorCode
from strom.metadata import BrokerRegistration, ConfigResourceType, MetadataImage
from strom.security.acls import CLUSTER_NAME, AclOperation, ResourceType
from strom.server.api.handler_table import RequestContext

__all__ = [
    "ALL_CLUSTER_OPERATIONS",
    "ALL_GROUP_OPERATIONS",
    "ALL_TOPIC_OPERATIONS",
    "AUTHORIZED_OPERATIONS_OMITTED",
    "BrokerAddress",
    "authorized_operations",
    "broker_addresses",
    "config_refusal",
    "wire_uuid",
]

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
