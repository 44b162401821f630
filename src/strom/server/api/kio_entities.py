"""kio bodies for any version of an API: one module per version, each with its own classes.

kio generates one class per message and version from Kafka's specs; a field appears in the
version that introduced it, so an older version's class has a subset of a newer one's fields.
Handlers name every value once and let the version's class say which fields it has:

- :func:`for_version` (admin and metadata handlers): build the response once with the newest
  version's classes (type-checked), then convert it to the version the client asked for
  (fields the older version lacks are dropped; fields the newer lacks must have a default).
- :func:`build` (data handlers, per request on the hot path): build the asked version's class
  (from :func:`response_module`) directly, dropping the values it has no field for.

Where the meaning of a field changes between versions (nullable names, error codes an old
client does not know), the handler decides before building.
"""

from __future__ import annotations

import dataclasses
import sys
import types
import typing
from collections.abc import Mapping
from functools import cache
from types import ModuleType
from typing import Any, TypeVar

from kio.static.protocol import ResponsePayload

from strom.protocol.api import response_type

__all__ = [
    "as_newest",
    "build",
    "convert",
    "for_version",
    "request_field",
    "response_module",
]

T = TypeVar("T")


@cache
def response_module(api_key: int, version: int) -> ModuleType:
    """kio's module of the response of ``api_key`` at ``version`` (its classes by name)."""
    return sys.modules[response_type(api_key, version).__module__]


_FIELD_NAMES: dict[type[Any], frozenset[str]] = {}


def _field_names(entity_type: type[Any]) -> frozenset[str]:
    names = _FIELD_NAMES.get(entity_type)
    if names is None:
        names = _FIELD_NAMES[entity_type] = frozenset(
            f.name for f in dataclasses.fields(entity_type)
        )
    return names


def build(entity_type: type[Any], /, **values: Any) -> Any:
    """An instance of ``entity_type`` from the values it has fields for (others are dropped).

    A field without a value takes its default; kio raises TypeError for a required one.
    """
    names = _field_names(entity_type)
    return entity_type(**{name: value for name, value in values.items() if name in names})


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
    source_fields = _field_names(source)
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


def as_newest(body: object, newest: type[T]) -> T:
    """``body`` typed as the newest request class of its API, so that mypy checks field names.

    Only a view: an older version's body lacks the newer fields; read those with
    :func:`request_field`.
    """
    return typing.cast(T, body)


def request_field(body: object, name: str, default: T) -> T:
    """A request field that older versions lack, or ``default`` (the value Kafka assumes)."""
    value: T = getattr(body, name, default)
    return value
