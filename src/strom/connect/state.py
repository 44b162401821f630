"""The herder's state, without I/O: the connectors' configs, target states and task configs as
the config topic's records make them, and the status of connectors and tasks as the status
topic's records do. ``apply`` is the only way either changes, on replay and for the worker's own
writes alike; the ``plan_*`` functions turn a request into the records that carry it out
(``strom.connect.records`` has their formats)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from strom.connect.errors import ConnectError
from strom.connect.records import (
    ConfigKey,
    TargetState,
    connector_key,
    parse_config_key,
    parse_status_key,
    status_connector_key,
    status_task_key,
    task_key,
)

__all__ = ["ConfigState", "Record", "Status", "StatusState"]

Record = tuple[str, dict[str, Any] | None]
"""A config or status topic record: its key, and its JSON value or None for a tombstone."""

Config = dict[str, str]


@dataclass
class ConfigState:
    """What the config topic says: per connector its config, target state and the task configs
    of its last commit (``task-`` records wait in ``_staged`` until their ``commit-``)."""

    configs: dict[str, Config] = field(default_factory=dict)
    targets: dict[str, TargetState] = field(default_factory=dict)
    tasks: dict[str, list[Config]] = field(default_factory=dict)
    _staged: dict[str, dict[int, Config]] = field(default_factory=dict)

    def apply(self, key: str, value: Mapping[str, Any] | None) -> None:
        parsed = parse_config_key(key)
        if parsed is None:
            return
        name = parsed.connector
        if parsed.kind is ConfigKey.CONNECTOR:
            if value is None:
                for table in (self.configs, self.targets, self.tasks, self._staged):
                    table.pop(name, None)
            else:
                self.configs[name] = _strings(value.get("properties") or {})
                self.targets.setdefault(name, TargetState.STARTED)
        elif parsed.kind is ConfigKey.TARGET_STATE:
            if value is None:
                self.targets.pop(name, None)
            else:
                self.targets[name] = TargetState.from_json(dict(value))
        elif parsed.kind is ConfigKey.TASK and value is not None:
            assert parsed.task is not None
            self._staged.setdefault(name, {})[parsed.task] = _strings(value.get("properties") or {})
        elif parsed.kind is ConfigKey.COMMIT and value is not None:
            count = int(value.get("tasks", 0))
            staged = self._staged.pop(name, {})
            if all(i in staged for i in range(count)):  # else a torn commit: keep the last one
                self.tasks[name] = [staged[i] for i in range(count)]

    def config(self, name: str) -> Config:
        if name not in self.configs:
            raise ConnectError.connector_not_found(name)
        return self.configs[name]

    def target(self, name: str) -> TargetState:
        self.config(name)
        return self.targets.get(name, TargetState.STARTED)

    def task_configs(self, name: str) -> list[Config]:
        self.config(name)
        return self.tasks.get(name, [])

    # -- planning ------------------------------------------------------------------------------
    def plan_put(
        self, name: str, config: Config, initial: TargetState = TargetState.STARTED
    ) -> tuple[bool, list[Record]]:
        """(created, records) for a connector's new config; a new connector's target state
        goes first, as Kafka Connect writes it (KIP-980's ``initial_state``)."""
        created = name not in self.configs
        records: list[Record] = [(connector_key(name), {"properties": dict(config)})]
        if created:
            records.insert(0, (f"{ConfigKey.TARGET_STATE.value}{name}", initial.to_json()))
        return created, records

    def plan_delete(self, name: str) -> list[Record]:
        self.config(name)
        return [(connector_key(name), None), (f"{ConfigKey.TARGET_STATE.value}{name}", None)]

    def plan_target(self, name: str, target: TargetState) -> list[Record]:
        self.config(name)
        records: list[Record] = [(f"{ConfigKey.TARGET_STATE.value}{name}", target.to_json())]
        if target is TargetState.STOPPED:  # KIP-875: a stopped connector has no tasks
            records += self.plan_tasks(name, [])
        return records

    def plan_tasks(self, name: str, configs: list[Config]) -> list[Record]:
        """The task configs and their commit; nothing when they are those in force."""
        if self.tasks.get(name) == configs and name in self.tasks:
            return []
        records: list[Record] = [
            (task_key(name, i), {"properties": dict(c)}) for i, c in enumerate(configs)
        ]
        return [*records, (f"{ConfigKey.COMMIT.value}{name}", {"tasks": len(configs)})]


@dataclass(frozen=True)
class Status:
    """A connector's or task's status record."""

    state: str
    worker_id: str
    generation: int = 0
    trace: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "trace": self.trace,
            "worker_id": self.worker_id,
            "generation": self.generation,
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Status:
        return cls(
            state=str(value["state"]),
            worker_id=str(value.get("worker_id", "")),
            generation=int(value.get("generation", 0)),
            trace=value.get("trace"),
        )


@dataclass
class StatusState:
    """What the status topic says, per connector and per task."""

    connectors: dict[str, Status] = field(default_factory=dict)
    tasks: dict[tuple[str, int], Status] = field(default_factory=dict)
    topics: dict[str, set[str]] = field(default_factory=dict)
    """KIP-558's active topics per connector (``status-topic-<topic>:connector-<name>``)."""

    def apply(self, key: str, value: Mapping[str, Any] | None) -> None:
        if key.startswith("status-topic-") and ":connector-" in key:
            topic, _, name = key.removeprefix("status-topic-").rpartition(":connector-")
            if value is None:
                self.topics.get(name, set()).discard(topic)
            else:
                self.topics.setdefault(name, set()).add(topic)
            return
        parsed = parse_status_key(key)
        if parsed is None:
            return
        name, task = parsed
        status = None if value is None else Status.from_json(value)
        if task is None:
            if status is None:
                self.connectors.pop(name, None)
            else:
                self.connectors[name] = status
        elif status is None:
            self.tasks.pop((name, task), None)
        else:
            self.tasks[(name, task)] = status

    @property
    def generation(self) -> int:
        """The highest generation any record has."""
        return max(
            (s.generation for s in (*self.connectors.values(), *self.tasks.values())), default=0
        )

    def plan(
        self, name: str, connector: Status | None, tasks: Mapping[int, Status | None]
    ) -> list[Record]:
        """Records that set a connector's status and its tasks' (None: a tombstone), skipping
        those the topic already says."""
        records: list[Record] = []
        if self.connectors.get(name) != connector:
            records.append(
                (status_connector_key(name), None if connector is None else connector.to_json())
            )
        for task, status in sorted(tasks.items()):
            if self.tasks.get((name, task)) != status:
                records.append(
                    (status_task_key(name, task), None if status is None else status.to_json())
                )
        return records


def _strings(properties: Mapping[str, Any]) -> Config:
    return {str(k): str(v) for k, v in properties.items() if v is not None}
