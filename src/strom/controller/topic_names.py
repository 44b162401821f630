"""Kafka's rules for topic names.

A name is 1 to 249 characters from ``[a-zA-Z0-9._-]`` and is neither ``.`` nor ``..``. Because
Kafka's metric names replace ``.`` with ``_``, two topics whose names differ only there would
collide: creating the second is refused (INVALID_TOPIC_EXCEPTION), while creating a topic under
exactly an existing name is TOPIC_ALREADY_EXISTS.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Final

from strom.common import ErrorCode, KafkaError

__all__ = [
    "CLUSTER_METADATA_TOPIC",
    "INTERNAL_TOPICS",
    "MAX_NAME_LENGTH",
    "CollisionIndex",
    "has_collision_chars",
    "invalid_topic_reason",
    "is_internal",
    "unify_collision_chars",
    "validate_topic_name",
]

MAX_NAME_LENGTH: Final = 249
GROUP_METADATA_TOPIC: Final = "__consumer_offsets"
TRANSACTION_STATE_TOPIC: Final = "__transaction_state"
CLUSTER_METADATA_TOPIC: Final = "__cluster_metadata"
SHARE_GROUP_STATE_TOPIC: Final = "__share_group_state"
INTERNAL_TOPICS: Final = frozenset(
    {GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC, SHARE_GROUP_STATE_TOPIC}
)
"""The topics Kafka flags as internal (``org.apache.kafka.common.internals.Topic``): clients
may not produce to them, and listings may leave them out; coordinators write them."""

_LEGAL: Final = re.compile(r"[a-zA-Z0-9._-]+")


def invalid_topic_reason(name: str) -> str | None:
    """Why ``name`` cannot be a topic name, or None when it can."""
    if not name:
        return "a topic name cannot be empty"
    if name in (".", ".."):
        return f"{name!r} cannot be a topic name"
    if len(name) > MAX_NAME_LENGTH:
        return f"topic name of {len(name)} characters is longer than the limit of {MAX_NAME_LENGTH}"
    if _LEGAL.fullmatch(name) is None:
        return f"topic name {name!r} may only contain ASCII letters, digits, '.', '_' and '-'"
    return None


def validate_topic_name(name: str) -> None:
    """Raise KafkaError(INVALID_TOPIC_EXCEPTION) when ``name`` is not a legal topic name."""
    reason = invalid_topic_reason(name)
    if reason is not None:
        raise KafkaError(ErrorCode.invalid_topic_exception, reason)


def is_internal(name: str) -> bool:
    return name in INTERNAL_TOPICS


def has_collision_chars(name: str) -> bool:
    return "." in name or "_" in name


def unify_collision_chars(name: str) -> str:
    """The name with every ``.`` as ``_``: names equal after this would collide."""
    return name.replace(".", "_")


class CollisionIndex:
    """Existing topic names by their unified form; answers "which topic would this collide with"."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        self._by_unified: dict[str, str] = {}
        for name in names:
            self.add(name)

    @classmethod
    def of(cls, names: Mapping[str, object]) -> CollisionIndex:
        return cls(name for name in names if has_collision_chars(name))

    def add(self, name: str) -> None:
        if has_collision_chars(name):
            self._by_unified.setdefault(unify_collision_chars(name), name)

    def collision(self, name: str) -> str | None:
        """An existing name, different from ``name``, that ``name`` would collide with."""
        if not has_collision_chars(name):
            return None
        existing = self._by_unified.get(unify_collision_chars(name))
        return None if existing == name else existing
