"""What the admin and metadata handlers share: one response shape for every version, and a few
constants of the protocol.

Each handler builds its response once, with kio's classes of the newest version it serves
(type-checked), and :func:`for_version` turns that into the version the client asked for: kio
generates one class per version from Kafka's message specs, and an older version's class has a
subset of the newer one's fields (fields a version lacks are dropped, fields the newer lacks
must have a default). Where the meaning of a field changes between versions (nullable names,
error codes an old client does not know), the handler decides before building.
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
import types
import typing
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Final, TypeVar

from kio.static.primitive import i32, i32Timedelta
from kio.static.protocol import ResponsePayload

from strom.controller import AlterConfigsResult
from strom.metadata import BrokerRegistration, ConfigResourceType, MetadataImage
from strom.protocol.api import response_type

__all__ = [
    "ALL_CLUSTER_OPERATIONS",
    "ALL_TOPIC_OPERATIONS",
    "AUTHORIZED_OPERATIONS_OMITTED",
    "LISTENER_NAME",
    "NO_THROTTLE",
    "BrokerAddress",
    "as_newest",
    "broker_addresses",
    "convert",
    "for_version",
    "log_config_changes",
    "request_field",
    "wire_uuid",
]

T = TypeVar("T")

NO_THROTTLE: Final = i32Timedelta.parse(datetime.timedelta(0))

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


LISTENER_NAME: Final = "PLAINTEXT"
"""The name of the (one) listener brokers register and clients are given."""


@dataclasses.dataclass(frozen=True, slots=True)
class BrokerAddress:
    """A broker as Metadata and DescribeCluster list it."""

    node_id: int
    host: str
    port: int
    rack: str | None
    fenced: bool


def broker_addresses(image: MetadataImage, *, include_fenced: bool = False) -> list[BrokerAddress]:
    """The brokers with an endpoint on the clients' listener, by id; fenced ones only when
    asked (Kafka lists only unfenced brokers to clients)."""
    addresses: list[BrokerAddress] = []
    for broker_id in sorted(image.cluster.brokers):
        broker: BrokerRegistration = image.cluster.brokers[broker_id]
        endpoint = broker.endpoint(LISTENER_NAME)
        if endpoint is None or (broker.fenced and not include_fenced):
            continue
        addresses.append(
            BrokerAddress(broker_id, endpoint.host, endpoint.port, broker.rack, broker.fenced)
        )
    return addresses


def wire_uuid(value: uuid.UUID | None) -> uuid.UUID | None:
    """A topic id as kio carries it: the zero UUID (Kafka's "no id") is None, as kio decodes it."""
    return None if value is None or value.int == 0 else value


def as_newest(body: object, newest: type[T]) -> T:
    """``body`` typed as the newest request class of its API, so that mypy checks field names.

    Only a view: an older version's body lacks the newer fields; read those with
    :func:`request_field`.
    """
    return typing.cast(T, body)


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


def request_field(body: object, name: str, default: T) -> T:
    """A request field that older versions lack, or ``default`` (the value Kafka assumes)."""
    value: T = getattr(body, name, default)
    return value


def for_version(
    response: ResponsePayload, version: int, *, extra: Mapping[str, object] | None = None
) -> ResponsePayload:
    """``response`` (a newer version's body) as the body of ``version`` of the same API.

    ``extra`` gives top-level fields that only older versions have (Metadata v8-v10's
    ``cluster_authorized_operations``); they are used when the target version has them.
    """
    target = response_type(int(response.__api_key__), version)
    converted: ResponsePayload = convert(response, target, extra=extra)
    return converted


def convert(entity: object, target: type[T], *, extra: Mapping[str, object] | None = None) -> T:
    """A kio entity as the corresponding entity class of another version; ``extra`` supplies
    fields of ``target`` that ``entity`` lacks."""
    if type(entity) is target and not extra:
        return entity
    provided = frozenset(extra or ())
    kwargs: dict[str, Any] = {}
    for name, nested in _plan(type(entity), target, provided):
        if name in provided:
            kwargs[name] = extra[name]  # type: ignore[index]  # provided is extra's keys
            continue
        value = getattr(entity, name)
        if nested is not None and value is not None:
            if isinstance(value, tuple):
                value = tuple(convert(item, nested) for item in value)
            else:
                value = convert(value, nested)
        kwargs[name] = value
    return target(**kwargs)


_Plan = tuple[tuple[str, type | None], ...]
_PLANS: dict[tuple[type, type, frozenset[str]], _Plan] = {}


def _plan(source: type, target: type, provided: frozenset[str]) -> _Plan:
    """The fields of ``target`` to fill (from ``source``, or from ``provided`` extras), each
    with its nested entity class."""
    key = (source, target, provided)
    plan = _PLANS.get(key)
    if plan is None:
        plan = _PLANS[key] = _make_plan(source, target, provided)
    return plan


def _make_plan(source: type, target: type, provided: frozenset[str]) -> _Plan:
    source_fields = {f.name for f in dataclasses.fields(source)}
    plan: list[tuple[str, type | None]] = []
    for field in dataclasses.fields(target):
        if field.name in source_fields or field.name in provided:
            plan.append((field.name, _entity_class(field.type)))
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            raise TypeError(
                f"{target.__qualname__}.{field.name} has no default and "
                f"{source.__qualname__} has no such field"
            )
    return tuple(plan)


def _entity_class(annotation: Any) -> type | None:
    """The kio entity class inside ``X``, ``X | None``, ``tuple[X, ...]`` or
    ``tuple[X, ...] | None``; None for primitives."""
    origin = typing.get_origin(annotation)
    if origin in (types.UnionType, typing.Union):
        inner = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        return _entity_class(inner[0]) if len(inner) == 1 else None
    if origin is tuple:
        return _entity_class(typing.get_args(annotation)[0])
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        return annotation
    return None
