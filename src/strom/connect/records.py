"""The records of Kafka Connect's internal topics, in Kafka Connect's own formats (the JSON its
internal converter writes, schemas off), so that a strom worker reads a topic a Java worker
wrote and the other way round.

Config topic (one partition):
  ``connector-<name>``        ``{"properties": {...}}``; a tombstone deletes the connector
  ``task-<name>-<n>``         ``{"properties": {...}}``, staged until the commit below
  ``commit-<name>``           ``{"tasks": <count>}``: the staged task configs take effect
  ``target-state-<name>``     ``{"state": "STARTED"|"PAUSED"}``, and for STOPPED
                              ``{"state": "PAUSED", "state.v2": "STOPPED"}`` (KIP-875: an older
                              worker sees PAUSED)
  ``restart-connector-<name>`` ``{"include-tasks": bool, "only-failed": bool}``
Status topic: ``status-connector-<name>`` and ``status-task-<name>-<n>``, each
``{"state", "trace", "worker_id", "generation"}``; a tombstone when the connector is deleted.
Offsets topic: the key ``["<connector>", {partition}]``, the value ``{offset}`` or a tombstone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum
from typing import Any

__all__ = [
    "ConfigKey",
    "TargetState",
    "connector_key",
    "decode",
    "encode",
    "offset_key",
    "parse_config_key",
    "parse_offset_key",
    "parse_status_key",
    "status_connector_key",
    "status_task_key",
    "task_key",
]

Json = dict[str, Any]


class TargetState(Enum):
    """What the user asked a connector to be (its ``target-state-`` record)."""

    STARTED = "STARTED"
    PAUSED = "PAUSED"
    STOPPED = "STOPPED"

    def to_json(self) -> Json:
        if self is TargetState.STOPPED:
            return {"state": "PAUSED", "state.v2": "STOPPED"}
        return {"state": self.value}

    @classmethod
    def from_json(cls, value: Json) -> TargetState:
        return cls(value.get("state.v2") or value["state"])


class ConfigKey(Enum):
    """The kinds of record in the config topic, by their key's prefix."""

    CONNECTOR = "connector-"
    TASK = "task-"
    COMMIT = "commit-"
    TARGET_STATE = "target-state-"
    RESTART = "restart-connector-"


def encode(value: Json | list[Any] | None) -> bytes | None:
    """A record's key or value as Kafka Connect's internal JSON converter writes it."""
    if value is None:
        return None
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def decode(raw: bytes | None) -> Any:
    return None if raw is None else json.loads(raw)


def connector_key(name: str) -> str:
    return f"{ConfigKey.CONNECTOR.value}{name}"


def task_key(name: str, task: int) -> str:
    return f"{ConfigKey.TASK.value}{name}-{task}"


def status_connector_key(name: str) -> str:
    return f"status-connector-{name}"


def status_task_key(name: str, task: int) -> str:
    return f"status-task-{name}-{task}"


@dataclass(frozen=True)
class ParsedKey:
    kind: ConfigKey
    connector: str
    task: int | None = None


def parse_config_key(key: str) -> ParsedKey | None:
    """The kind and connector (and task) of a config topic key; None for keys this worker does
    not use (``session-key``, ``task-count-record-``, ...)."""
    for kind in ConfigKey:
        if key.startswith(kind.value):
            rest = key[len(kind.value) :]
            if kind is ConfigKey.TASK:
                name, _, number = rest.rpartition("-")
                return ParsedKey(kind, name, int(number)) if number.isdigit() and name else None
            return ParsedKey(kind, rest)
    return None


def parse_status_key(key: str) -> tuple[str, int | None] | None:
    """(connector, task or None) of a status topic key; None for other keys (topic status)."""
    if key.startswith("status-connector-"):
        return key[len("status-connector-") :], None
    if key.startswith("status-task-"):
        name, _, number = key[len("status-task-") :].rpartition("-")
        if name and number.isdigit():
            return name, int(number)
    return None


def offset_key(connector: str, partition: Json) -> bytes:
    """The offsets topic key of a source partition of a connector."""
    key = encode([connector, partition])
    assert key is not None
    return key


def parse_offset_key(raw: bytes | None) -> tuple[str, Json] | None:
    """(connector, partition) of an offsets topic key; None for a key of another shape."""
    try:
        value = decode(raw)
    except ValueError:
        return None
    if (
        isinstance(value, list)
        and len(value) == 2
        and isinstance(value[0], str)
        and isinstance(value[1], dict)
    ):
        return value[0], value[1]
    return None
