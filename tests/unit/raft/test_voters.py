"""The voter set in the log (KIP-853): its record, its history, and snapshots that carry it."""

from __future__ import annotations

import uuid

from strom.raft import InMemoryRaftLog, OffsetAndEpoch, SnapshotReader, SnapshotWriter
from strom.raft.voters import Endpoint, VoterNode, VoterSet, VoterSetHistory, read_voters_record

ONE = VoterNode(1, uuid.UUID(int=1), (Endpoint("CONTROLLER", "c1", 9093),))
TWO = VoterNode(2, uuid.UUID(int=2), (Endpoint("CONTROLLER", "c2", 9093),))


def test_voters_record_round_trips() -> None:
    voters = VoterSet.of([TWO, ONE])
    assert read_voters_record(voters.encode()) == voters
    assert voters.ids == {1, 2}
    assert voters.without(1) == VoterSet.of([TWO])


def test_history_follows_appends_and_truncation() -> None:
    history = VoterSetHistory(VoterSet.of_ids([]))
    assert history.dynamic
    history.add(3, VoterSet.of([ONE]))
    history.add(10, VoterSet.of([ONE, TWO]))
    assert history.latest().ids == {1, 2}
    assert history.at(10).ids == {1}
    assert history.at(11).ids == {1, 2}
    assert [v.ids for v in history.sets_between(5, 12)] == [{1}, {1, 2}]
    history.truncate_to(10)
    assert history.latest().ids == {1}
    assert history.last_change_offset == 3


def test_static_voters_are_not_dynamic() -> None:
    static = VoterSetHistory(VoterSet.of_ids([1, 2, 3]))
    assert not static.dynamic
    loaded = VoterSetHistory(VoterSet.of_ids([1, 2, 3]))
    loaded.reset(VoterSet.of([ONE]))  # a snapshot with a Voters record
    assert loaded.dynamic
    assert loaded.latest().ids == {1}


def test_snapshot_carries_the_voters() -> None:
    log = InMemoryRaftLog()
    voters = VoterSet.of([ONE, TWO])
    writer = SnapshotWriter(
        OffsetAndEpoch(0, 0), timestamp=0, on_frozen=log.store_snapshot, voters=voters
    )
    writer.append([b"a"])
    writer.freeze()
    data = log.read_snapshot(OffsetAndEpoch(0, 0))
    assert data is not None
    reader = SnapshotReader(OffsetAndEpoch(0, 0), data)
    assert reader.voters == voters
    assert list(reader.records()) == [b"a"]
