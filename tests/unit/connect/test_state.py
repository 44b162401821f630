"""The herder's pure state: Kafka Connect's config, status and offsets records replayed, and
the records a request plans."""

from __future__ import annotations

import pytest

from strom.connect.config_def import error_messages
from strom.connect.errors import ConnectError
from strom.connect.offsets import SourceOffsets
from strom.connect.records import TargetState, offset_key, parse_config_key
from strom.connect.state import ConfigState, Status, StatusState


def _replay(records: list[tuple[str, dict[str, object] | None]]) -> ConfigState:
    state = ConfigState()
    for key, value in records:
        state.apply(key, value)
    return state


def test_task_configs_take_effect_with_their_commit_only() -> None:
    state = _replay(
        [
            ("target-state-a", {"state": "STARTED"}),
            ("connector-a", {"properties": {"connector.class": "X", "tasks.max": "2"}}),
            ("task-a-0", {"properties": {"n": "0"}}),
            ("task-a-1", {"properties": {"n": "1"}}),
        ]
    )
    assert state.task_configs("a") == []  # staged, not committed
    state.apply("commit-a", {"tasks": 2})
    assert state.task_configs("a") == [{"n": "0"}, {"n": "1"}]
    state.apply("task-a-0", {"properties": {"n": "new"}})
    state.apply("commit-a", {"tasks": 2})  # task-a-1 missing: a torn commit keeps the last
    assert state.task_configs("a") == [{"n": "0"}, {"n": "1"}]
    state.apply("session-key", {"key": "k"})  # keys of other features are skipped
    state.apply("connector-a", None)
    with pytest.raises(ConnectError, match="Connector a not found"):
        state.config("a")


def test_target_states_in_connects_formats() -> None:
    assert TargetState.STOPPED.to_json() == {"state": "PAUSED", "state.v2": "STOPPED"}
    state = _replay([("connector-a", {"properties": {}})])
    assert state.target("a") is TargetState.STARTED
    state.apply("target-state-a", {"state": "PAUSED"})
    assert state.target("a") is TargetState.PAUSED
    state.apply("target-state-a", TargetState.STOPPED.to_json())
    assert state.target("a") is TargetState.STOPPED
    assert state.plan_target("a", TargetState.STOPPED) == [
        ("target-state-a", {"state": "PAUSED", "state.v2": "STOPPED"}),
        ("commit-a", {"tasks": 0}),
    ]
    assert parse_config_key("task-my-conn-12") is not None
    assert parse_config_key("task-my-conn-12").task == 12  # type: ignore[union-attr]
    assert parse_config_key("restart-connector-b").kind.name == "RESTART"  # type: ignore[union-attr]


def test_plans() -> None:
    state = ConfigState()
    created, records = state.plan_put("a", {"k": "v"})
    assert created and records == [
        ("target-state-a", {"state": "STARTED"}),
        ("connector-a", {"properties": {"k": "v"}}),
    ]
    for key, value in records:
        state.apply(key, value)
    assert state.plan_put("a", {"k": "w"}) == (False, [("connector-a", {"properties": {"k": "w"}})])
    assert state.plan_tasks("a", [{"t": "1"}]) == [
        ("task-a-0", {"properties": {"t": "1"}}),
        ("commit-a", {"tasks": 1}),
    ]
    state.apply("task-a-0", {"properties": {"t": "1"}})
    state.apply("commit-a", {"tasks": 1})
    assert state.plan_tasks("a", [{"t": "1"}]) == []
    assert state.plan_delete("a") == [("connector-a", None), ("target-state-a", None)]


def test_status_records_and_generation() -> None:
    statuses = StatusState()
    running = Status("RUNNING", "w:8083", 3)
    records = statuses.plan("a", running, {0: running, 1: None})
    assert records == [
        (
            "status-connector-a",
            {"state": "RUNNING", "trace": None, "worker_id": "w:8083", "generation": 3},
        ),
        (
            "status-task-a-0",
            {"state": "RUNNING", "trace": None, "worker_id": "w:8083", "generation": 3},
        ),
    ]
    for key, value in records:
        statuses.apply(key, value)
    assert statuses.generation == 3 and statuses.plan("a", running, {0: running}) == []
    statuses.apply("status-topic-t:connector-a", {"topic": {"name": "t"}})
    assert statuses.topics == {"a": {"t"}}
    statuses.apply("status-topic-t:connector-a", None)
    statuses.apply("status-task-a-0", None)
    assert statuses.topics == {"a": set()} and statuses.tasks == {}


def test_source_offsets_by_connector_and_partition() -> None:
    offsets = SourceOffsets()
    key = offset_key("files", {"filename": "/in.txt"})
    assert key == b'["files",{"filename":"/in.txt"}]'
    offsets.apply(key, b'{"position":42}')
    offsets.apply(b"not json", b"{}")
    assert offsets.offset("files", {"filename": "/in.txt"}) == {"position": 42}
    assert offsets.listed("files") == [
        {"partition": {"filename": "/in.txt"}, "offset": {"position": 42}}
    ]
    assert offsets.records("files", None) == [(key, None)]
    offsets.apply(key, None)
    assert offsets.listed("files") == []


def test_validation_messages_are_connects() -> None:
    from strom.connect.connectors.files import FileStreamSink  # noqa: PLC0415

    infos = FileStreamSink.validate(
        {
            "name": "s",
            "connector.class": "FileStreamSink",
            "topics": "a",
            "topics.regex": "b.*",
            "tasks.max": "0",
        }
    )
    assert error_messages(infos) == [
        "Invalid value 0 for configuration tasks.max: Value must be at least 1",
        "topics and topics.regex are mutually exclusive options, but both are set.",
    ]
