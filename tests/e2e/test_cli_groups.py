"""``strom groups`` and ``strom consume --group`` end to end, against a real ``strom server``."""

from __future__ import annotations

import shlex
import signal
import subprocess
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer
from strom_harness import start_strom_server, strom_command

from .conftest import SERVER_OVERRIDES, Server
from .test_cli import SAFETY, consume_values, eventually

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server whose groups complete their first rebalance quickly."""
    base = tmp_path_factory.mktemp("strom-e2e-groups")
    overrides = {**SERVER_OVERRIDES, "group.initial.rebalance.delay.ms": "100"}
    process = start_strom_server(data_dir=base / "data", cwd=base, overrides=overrides)
    yield Server(process)
    process.stop(signal.SIGTERM)


def _topic_with_messages(server: Server, topic: str, per_partition: int) -> None:
    """``topic`` with two partitions of ``per_partition`` messages each."""
    server.run("topics", "create", topic, "--partitions", "2")
    for partition in (0, 1):
        lines = "".join(f"{topic}-{partition}-{i}\n" for i in range(per_partition))
        server.run("produce", topic, "--partition", str(partition), input=lines)


def _consume_in_group(server: Server, topic: str, group: str, count: int) -> None:
    """Consume ``count`` messages in ``group`` and leave it (its offsets committed)."""
    consume_values(server, topic, count, "--group", group)


def _rows(text: str, first: str) -> list[list[str]]:
    """The rows of the table whose header line starts with ``first``, as lists of cells."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(first))
    rows = []
    for line in lines[start + 1 :]:
        if not line.strip():
            break
        rows.append(line.split())
    return rows


def _offsets(server: Server, group: str) -> dict[tuple[str, int], str]:
    """The CURRENT-OFFSET column of ``groups describe``, by partition."""
    described = server.run("groups", "describe", group)
    return {(row[0], int(row[1])): row[2] for row in _rows(described.stdout, "TOPIC")}


class ActiveConsumer:
    """A confluent-kafka consumer in a group, polled until it owns partitions."""

    def __init__(self, server: Server, topic: str, group: str) -> None:
        self.consumer = Consumer(
            {
                "bootstrap.servers": server.bootstrap,
                "group.id": group,
                "client.id": "e2e-member",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        self.consumer.subscribe([topic])

        def assigned() -> None:
            self.consumer.poll(0.2)
            assert self.consumer.assignment()

        eventually(assigned, timeout=30)

    def close(self) -> None:
        self.consumer.close()


def test_group_commits_and_resumes(server: Server) -> None:
    server.run("topics", "create", "grouped", "--partitions", "1")
    server.run("produce", "grouped", input="".join(f"g{i}\n" for i in range(5)))
    assert consume_values(server, "grouped", 2, "--group", "cli-group") == ["g0", "g1"]
    # the group resumes from its committed offset; --from-beginning only applies without one
    resumed = server.run(
        "consume", "grouped", "--group", "cli-group", "--max-messages", "3", *SAFETY
    )
    assert resumed.lines == ["g2", "g3", "g4"]
    # a manual assignment in the group starts at the group's committed offset too
    assigned = server.run(
        "consume", "grouped", "--group", "cli-group", "--partition", "0", "--timeout-ms", "2000"
    )
    assert assigned.lines == []


def test_list_shows_state_and_type_and_filters_by_state(server: Server) -> None:
    _topic_with_messages(server, "listed", 2)
    _consume_in_group(server, "listed", "listed-empty", 4)
    active = ActiveConsumer(server, "listed", "listed-active")
    try:
        listed = server.run("groups", "list")
        assert listed.lines[0].split() == ["GROUP", "STATE", "TYPE"]
        rows = {row[0]: row[1:] for row in _rows(listed.stdout, "GROUP")}
        assert rows["listed-empty"] == ["Empty", "Classic"]
        assert rows["listed-active"] == ["Stable", "Classic"]
        stable = _rows(server.run("groups", "list", "--state", "Stable").stdout, "GROUP")
        assert ["listed-active", "Stable", "Classic"] in stable
        assert all(row[1] == "Stable" for row in stable)
        both = server.run("groups", "list", "--state", "empty,STABLE").stdout
        assert {"listed-empty", "listed-active"} <= {row[0] for row in _rows(both, "GROUP")}
    finally:
        active.close()


def test_list_rejects_an_unknown_state(server: Server) -> None:
    result = server.run("groups", "list", "--state", "Sleeping", ok=False)
    assert result.returncode == 2
    assert result.error_lines == [
        "Error: Invalid value for '--state': unknown state 'Sleeping' (one of: "
        "PreparingRebalance, CompletingRebalance, Stable, Dead, Empty)"
    ]


def test_describe_shows_members_offsets_and_lag(server: Server) -> None:
    _topic_with_messages(server, "described", 5)
    _consume_in_group(server, "described", "describer", 6)
    offsets = _offsets(server, "describer")
    assert sum(int(offset) for offset in offsets.values()) == 6
    active = ActiveConsumer(server, "described", "describer")
    try:
        text = server.run("groups", "describe", "describer").stdout
        header = text.splitlines()[0].split("\t")
        assert header[:4] == ["Group: describer", "State: Stable", "Protocol: range", "Members: 1"]
        (member,) = _rows(text, "MEMBER-ID")
        member_id = member[0]
        assert member[1:] == ["-", "e2e-member", "/127.0.0.1", "2", "described:0,1"]
        partitions = _rows(text, "TOPIC")
        assert [row[:2] for row in partitions] == [["described", "0"], ["described", "1"]]
        for row in partitions:
            _, partition, current, end, lag, owner, host, client = row
            assert end == "5"
            assert current == offsets[("described", int(partition))]
            assert int(lag) == 5 - int(current)
            assert [owner, host, client] == [member_id, "/127.0.0.1", "e2e-member"]
    finally:
        active.close()
    text = server.run("groups", "describe", "describer").stdout
    assert "State: Empty" in text
    assert "Group describer has no active members." in text
    assert all(row[5:] == ["-", "-", "-"] for row in _rows(text, "TOPIC"))


def test_describe_an_unknown_group_is_an_error(server: Server) -> None:
    result = server.run("groups", "describe", "no-such-group", ok=False)
    assert result.returncode == 1
    assert result.error_lines == ["Error: group 'no-such-group' does not exist"]


def test_delete(server: Server) -> None:
    _topic_with_messages(server, "deleted", 1)
    _consume_in_group(server, "deleted", "to-delete", 2)
    active = ActiveConsumer(server, "deleted", "busy")
    try:
        result = server.run("groups", "delete", "to-delete", "busy", "no-such-group", ok=False)
        assert result.returncode == 1
        assert result.lines == ["Deleted group to-delete."]
        assert [line.split(":")[0:2] for line in result.error_lines] == [
            ["Error", " cannot delete group 'busy'"],
            ["Error", " cannot delete group 'no-such-group'"],
        ]
        assert "NON_EMPTY_GROUP" in result.error_lines[0]
        assert "GROUP_ID_NOT_FOUND" in result.error_lines[1]
    finally:
        active.close()
    listed = {row[0] for row in _rows(server.run("groups", "list").stdout, "GROUP")}
    assert "to-delete" not in listed
    assert server.run("groups", "delete", "busy").lines == ["Deleted group busy."]


def _reset(server: Server, *args: str, ok: bool = True) -> dict[tuple[str, int], int]:
    result = server.run("groups", "reset-offsets", *args, ok=ok)
    return {(row[1], int(row[2])): int(row[3]) for row in _rows(result.stdout, "GROUP")}


def test_reset_offsets_is_a_dry_run_by_default(server: Server) -> None:
    _topic_with_messages(server, "dry", 4)
    _consume_in_group(server, "dry", "dry-group", 8)
    before = _offsets(server, "dry-group")
    result = server.run(
        "groups", "reset-offsets", "--group", "dry-group", "--topic", "dry", "--to-earliest"
    )
    assert result.lines[0].split() == ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]
    assert [line.split() for line in result.lines[1:]] == [
        ["dry-group", "dry", "0", "0"],
        ["dry-group", "dry", "1", "0"],
    ]
    assert result.error_lines == [
        "Dry run: nothing was changed; add --execute to commit these offsets."
    ]
    assert _offsets(server, "dry-group") == before == {("dry", 0): "4", ("dry", 1): "4"}
    plan = _reset(server, "--group", "dry-group", "--topic", "dry", "--to-earliest", "--dry-run")
    assert plan == {("dry", 0): 0, ("dry", 1): 0}
    assert _offsets(server, "dry-group") == before


def test_reset_offsets_every_scenario_with_execute(server: Server) -> None:
    _topic_with_messages(server, "resets", 10)
    _consume_in_group(server, "resets", "resetter", 20)
    group = ["--group", "resetter", "--execute"]

    assert _reset(server, *group, "--topic", "resets", "--to-earliest") == {
        ("resets", 0): 0,
        ("resets", 1): 0,
    }
    assert _offsets(server, "resetter") == {("resets", 0): "0", ("resets", 1): "0"}
    # only the partitions named; the other keeps its offset
    assert _reset(server, *group, "--topic", "resets:1", "--to-offset", "7") == {("resets", 1): 7}
    assert _offsets(server, "resetter") == {("resets", 0): "0", ("resets", 1): "7"}
    # --shift-by moves the committed offsets and clamps to [log start, log end]
    assert _reset(server, *group, "--all-topics", "--shift-by", "5") == {
        ("resets", 0): 5,
        ("resets", 1): 10,
    }
    assert _reset(server, *group, "--all-topics", "--shift-by", "-6") == {
        ("resets", 0): 0,
        ("resets", 1): 4,
    }
    # --to-offset past the end is clamped to the log end offset
    assert _reset(server, *group, "--topic", "resets:0", "--to-offset", "1000") == {
        ("resets", 0): 10
    }
    assert _reset(server, *group, "--topic", "resets", "--to-latest") == {
        ("resets", 0): 10,
        ("resets", 1): 10,
    }
    # a time before every message: the first offset; after every message: the log end
    assert _reset(server, *group, "--topic", "resets", "--to-datetime", "2000-01-01T00:00:00Z") == {
        ("resets", 0): 0,
        ("resets", 1): 0,
    }
    assert _reset(server, *group, "--topic", "resets", "--to-datetime", "2999-01-01T00:00:00") == {
        ("resets", 0): 10,
        ("resets", 1): 10,
    }
    assert _offsets(server, "resetter") == {("resets", 0): "10", ("resets", 1): "10"}
    # the group resumes where the reset put it
    server.run("groups", "reset-offsets", *group, "--topic", "resets:0", "--to-offset", "8")
    resumed = server.run("consume", "resets", "--group", "resetter", "--max-messages", "2", *SAFETY)
    assert resumed.lines == ["resets-0-8", "resets-0-9"]


def test_reset_offsets_of_a_new_group_creates_it(server: Server) -> None:
    _topic_with_messages(server, "seeded", 6)
    plan = _reset(server, "--group", "seeded-group", "--topic", "seeded:1", "--to-offset", "4")
    assert plan == {("seeded", 1): 4}
    assert server.run("groups", "describe", "seeded-group", ok=False).returncode == 1
    executed = _reset(
        server, "--group", "seeded-group", "--topic", "seeded:1", "--to-offset", "4", "--execute"
    )
    assert executed == plan
    assert _offsets(server, "seeded-group") == {("seeded", 1): "4"}
    # --from-beginning applies to partition 0 only: partition 1 has a committed offset
    resumed = consume_values(server, "seeded", 8, "--group", "seeded-group")
    assert sorted(resumed) == sorted(
        [f"seeded-0-{i}" for i in range(6)] + ["seeded-1-4", "seeded-1-5"]
    )


def test_reset_offsets_refuses_while_the_group_is_active(server: Server) -> None:
    _topic_with_messages(server, "busy-reset", 3)
    _consume_in_group(server, "busy-reset", "busy-resetter", 6)
    active = ActiveConsumer(server, "busy-reset", "busy-resetter")
    try:
        for mode in ("--dry-run", "--execute"):
            result = server.run(
                "groups",
                "reset-offsets",
                "--group",
                "busy-resetter",
                "--topic",
                "busy-reset",
                "--to-earliest",
                mode,
                ok=False,
            )
            assert result.returncode == 1
            assert result.stdout == ""
            assert result.error_lines == [
                "Error: cannot reset the offsets of group 'busy-resetter' while it has active "
                "members (state Stable); stop its consumers first"
            ]
    finally:
        active.close()
    assert _offsets(server, "busy-resetter") == {("busy-reset", 0): "3", ("busy-reset", 1): "3"}


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        (["--topic", "t", "--to-earliest", "--to-latest"], 2, "give exactly one of --to-earliest"),
        (["--topic", "t"], 2, "give exactly one of --to-earliest"),
        (["--to-earliest"], 2, "give either --topic (repeatable) or --all-topics"),
        (["--topic", "t", "--all-topics", "--to-latest"], 2, "give either --topic"),
        (["--topic", "t", "--to-datetime", "yesterday"], 2, "expected an ISO 8601 date-time"),
        (["--topic", "no-such-topic", "--to-earliest"], 1, "topic 'no-such-topic' does not exist"),
        (["--topic", "grouped:5", "--to-earliest"], 1, "topic 'grouped' has no partition 5"),
        (["--topic", "grouped:x", "--to-earliest"], 2, "expected TOPIC or TOPIC:P,P..."),
        (["--all-topics", "--to-earliest"], 1, "group 'fresh' has no committed offsets"),
    ],
)
def test_reset_offsets_bad_arguments_are_one_line_errors(
    server: Server, args: list[str], status: int, message: str
) -> None:
    server.run("topics", "create", "grouped", "--partitions", "1", "--if-not-exists")
    result = server.run("groups", "reset-offsets", "--group", "fresh", *args, ok=False)
    assert result.returncode == status, result
    assert len(result.error_lines) == 1, result
    assert result.error_lines[0].startswith("Error: ")
    assert message in result.error_lines[0]


def test_shift_by_needs_a_committed_offset(server: Server) -> None:
    server.run("topics", "create", "unshifted", "--partitions", "1")
    result = server.run(
        "groups",
        "reset-offsets",
        "--group",
        "fresh",
        "--topic",
        "unshifted",
        "--shift-by",
        "1",
        ok=False,
    )
    assert result.returncode == 1
    assert result.error_lines == [
        "Error: cannot shift the offset of unshifted-0: the group has no committed offset for it"
    ]


def test_sigterm_ends_consume_and_leaves_the_group_at_once(server: Server) -> None:
    _topic_with_messages(server, "terminated", 1)
    command = [*strom_command(), "consume", "terminated", "--group", "terminated-group"]
    process = subprocess.Popen(
        [*command, "--bootstrap-server", server.bootstrap],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        hint = process.stderr.readline()
        assert "resumes from its committed offsets" in hint and "--from-beginning" in hint
        eventually(lambda: _has_members(server, "terminated-group"), timeout=30)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 130
    finally:
        process.kill()
    # It left the group on its way out: the group can go now, no session timeout to wait for.
    assert server.run("groups", "delete", "terminated-group").lines == [
        "Deleted group terminated-group."
    ]


def _has_members(server: Server, group: str) -> None:
    assert "has no active members" not in server.run("groups", "describe", group).stdout


def test_a_closed_pipe_is_a_normal_end_of_consume(server: Server) -> None:
    _topic_with_messages(server, "piped", 5)
    consume = " ".join(shlex.quote(part) for part in strom_command())
    script = (
        f"{consume} consume piped --from-beginning --bootstrap-server {server.bootstrap}"
        " | head -n 2; exit ${PIPESTATUS[0]}"
    )
    completed = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    assert len(lines) == 2 and all(line.startswith("piped-") for line in lines)
    assert "Traceback" not in completed.stderr
