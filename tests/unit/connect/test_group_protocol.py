"""Connect's group protocol (the ``compatible`` metadata and assignment bytes) and the leader's
incremental cooperative assignor."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strom.connect.assignor import assign
from strom.connect.protocol import (
    CONFIG_MISMATCH,
    Assignment,
    ProtocolError,
    WorkerState,
    decode_assignment,
    decode_metadata,
    encode_assignment,
    encode_metadata,
)

names = st.lists(st.text(min_size=1, max_size=8), unique=True, max_size=5)


def _string(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


def test_metadata_is_connects_layout() -> None:
    """Version 1, url, config offset, then the allocation as nullable bytes (null: nothing)."""
    data = encode_metadata(WorkerState("http://a:8083", 7))
    assert data == struct.pack(">h", 1) + _string("http://a:8083") + struct.pack(">qi", 7, -1)
    assert decode_metadata(data) == WorkerState("http://a:8083", 7)


def test_version_0_metadata_has_no_allocation() -> None:
    data = struct.pack(">h", 0) + _string("http://b:1") + struct.pack(">q", 3)
    assert decode_metadata(data) == WorkerState("http://b:1", 3)


def test_assignment_is_connects_layout() -> None:
    """The connector itself is task -1, listed before its tasks."""
    given_ = Assignment(
        leader="m1", leader_url="http://a", config_offset=9, connectors=("c",), tasks=(("c", 0),)
    )
    data = encode_assignment(given_)
    expected = (
        struct.pack(">hh", 1, 0)
        + _string("m1")
        + _string("http://a")
        + struct.pack(">q", 9)
        + struct.pack(">i", 1)
        + _string("c")
        + struct.pack(">iii", 2, -1, 0)
        + struct.pack(">i", 0)
        + struct.pack(">i", 0)
    )
    assert data == expected
    assert decode_assignment(data) == given_


def test_truncated_bytes_are_refused() -> None:
    with pytest.raises(ProtocolError):
        decode_metadata(encode_metadata(WorkerState("http://a", 1))[:-3])


@given(names, names, st.integers(-1, 2**40))
def test_assignment_round_trips(connectors: list[str], revoked: list[str], offset: int) -> None:
    assignment = Assignment(
        leader="l",
        leader_url="u",
        config_offset=offset,
        connectors=tuple(connectors),
        tasks=tuple((c, i) for c in connectors for i in range(2)),
        revoked_connectors=tuple(revoked),
        delay_ms=5,
    )
    assert decode_assignment(encode_assignment(assignment)) == assignment
    state = WorkerState("http://x", offset, assignment)
    assert decode_metadata(encode_metadata(state)) == state


def _member(url: str, offset: int = 10, *running: str) -> WorkerState:
    return WorkerState(url, offset, Assignment(connectors=running))


def test_a_lone_worker_runs_every_connector_with_its_tasks() -> None:
    result = assign({"m1": _member("u1")}, {"a": 2, "b": 0}, leader="m1", config_offset=10)
    assert result["m1"].connectors == ("a", "b")
    assert result["m1"].tasks == (("a", 0), ("a", 1))
    assert result["m1"].leader_url == "u1"


def test_connectors_stay_where_they_run_and_a_departed_workers_are_taken_over() -> None:
    members = {"m1": _member("u1", 10, "a", "gone"), "m2": _member("u2", 10, "b")}
    result = assign(members, {"a": 1, "b": 1, "c": 1}, leader="m1", config_offset=10)
    # "c" (new, or a departed worker's) goes to the least loaded: a tie, so the first
    assert result["m1"].connectors == ("a", "c")
    assert result["m1"].revoked_connectors == ("gone",)  # deleted meanwhile
    assert result["m2"].connectors == ("b",)


def test_a_joining_worker_gets_connectors_in_two_rounds() -> None:
    """Round one revokes the surplus from the busy worker; round two hands it out."""
    members = {"m1": _member("u1", 10, "a", "b", "c", "d"), "m2": _member("u2", 10)}
    counts = dict.fromkeys("abcd", 1)
    first = assign(members, counts, leader="m1", config_offset=10)
    assert len(first["m1"].revoked_connectors) == 2
    assert first["m2"].connectors == ()
    members = {
        "m1": _member("u1", 10, *first["m1"].connectors),
        "m2": _member("u2", 10),
    }
    second = assign(members, counts, leader="m1", config_offset=10)
    assert len(second["m1"].connectors) == len(second["m2"].connectors) == 2
    assert set(second["m1"].connectors) | set(second["m2"].connectors) == set("abcd")
    assert second["m1"].revoked_connectors == second["m2"].revoked_connectors == ()


def test_a_connector_claimed_twice_stays_with_one() -> None:
    members = {"m1": _member("u1", 10, "a"), "m2": _member("u2", 10, "a")}
    result = assign(members, {"a": 1}, leader="m2", config_offset=10)
    assert result["m1"].connectors == ("a",)
    assert result["m2"].revoked_connectors == ("a",)


def test_a_member_ahead_of_the_leader_gets_config_mismatch() -> None:
    members = {"m1": _member("u1", 5), "m2": _member("u2", 8)}
    result = assign(members, {"a": 1}, leader="m1", config_offset=5)
    assert {a.error for a in result.values()} == {CONFIG_MISMATCH}
    assert result["m2"].connectors == ()


@given(
    st.dictionaries(
        st.sampled_from(["m1", "m2", "m3"]),
        st.lists(st.sampled_from("abcdefg"), unique=True),
        min_size=1,
    ),
    st.lists(st.sampled_from("abcdefgh"), unique=True),
)
def test_no_connector_ever_runs_twice_and_loads_converge(
    running: dict[str, list[str]], connectors: list[str]
) -> None:
    counts = dict.fromkeys(connectors, 1)
    for _ in range(3):
        members = {m: _member(m, 0, *names_) for m, names_ in running.items()}
        result = assign(members, counts, leader=min(members), config_offset=0)
        kept = [c for a in result.values() for c in a.connectors]
        assert len(kept) == len(set(kept))  # never on two workers
        for member, given_ in result.items():
            previous = set(running[member])
            # nothing moves onto a worker while another still runs it
            others = {c for m, names_ in running.items() if m != member for c in names_}
            assert not (set(given_.connectors) - previous) & others
        running = {m: list(a.connectors) for m, a in result.items()}
    loads = [len(names_) for names_ in running.values()]
    assert set().union(*map(set, running.values())) == set(connectors)
    assert max(loads) - min(loads) <= 1
