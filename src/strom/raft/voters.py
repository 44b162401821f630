"""The quorum's voter set and its history in the log (KIP-853, Kafka's ``VoterSet`` and
``VoterSetHistory``).

With ``kraft.version`` 0 the voters are static (``controller.quorum.voters``). With
``kraft.version`` 1 they live in the log: a KRaftVersion control record (type 5) and a Voters
control record (type 6) in the bootstrap snapshot that ``strom storage format --standalone``
or ``--initial-controllers`` writes, and a new Voters record for each change. A change takes
effect on every replica as soon as the record is in its log (appended, not committed), and a
replica that truncates the record goes back to the set before it; a snapshot carries the set
in effect at its end offset.
"""

from __future__ import annotations

import io
import uuid
from collections.abc import Collection, Iterable
from dataclasses import dataclass, replace
from typing import Any

from kio.schema.k_raft_version_record.v0.data import KRaftVersionRecord
from kio.schema.types import BrokerId
from kio.schema.voters_record.v0 import data as voters_data
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i16, u16

__all__ = [
    "Endpoint",
    "VoterNode",
    "VoterSet",
    "VoterSetHistory",
    "kraft_version_record",
    "read_voters_record",
]


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A listener a voter is reached on (``CONTROLLER``, host, port)."""

    name: str
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class VoterNode:
    """A voter: its node id, the directory id of its metadata log, its listeners."""

    node_id: int
    directory_id: uuid.UUID | None = None
    endpoints: tuple[Endpoint, ...] = ()


@dataclass(frozen=True, slots=True)
class VoterSet:
    """The voters, by node id."""

    nodes: tuple[VoterNode, ...]

    @classmethod
    def of(cls, nodes: Iterable[VoterNode]) -> VoterSet:
        return cls(tuple(sorted(nodes, key=lambda node: node.node_id)))

    @classmethod
    def of_ids(cls, ids: Collection[int]) -> VoterSet:
        return cls.of(VoterNode(node_id) for node_id in ids)

    @property
    def ids(self) -> frozenset[int]:
        return frozenset(node.node_id for node in self.nodes)

    def get(self, node_id: int) -> VoterNode | None:
        return next((node for node in self.nodes if node.node_id == node_id), None)

    def with_voter(self, node: VoterNode) -> VoterSet:
        return VoterSet.of([*self.nodes, node])

    def without(self, node_id: int) -> VoterSet:
        return VoterSet.of(node for node in self.nodes if node.node_id != node_id)

    def with_endpoints(self, node_id: int, endpoints: tuple[Endpoint, ...]) -> VoterSet:
        return VoterSet.of(
            replace(node, endpoints=endpoints) if node.node_id == node_id else node
            for node in self.nodes
        )

    def record(self) -> voters_data.VotersRecord:
        feature = voters_data.KRaftVersionFeature(
            min_supported_version=i16(0), max_supported_version=i16(1)
        )
        return voters_data.VotersRecord(
            version=i16(0),
            voters=tuple(
                voters_data.Voter(
                    voter_id=BrokerId(node.node_id),
                    voter_directory_id=node.directory_id,
                    endpoints=tuple(
                        voters_data.Endpoint(name=e.name, host=e.host, port=u16(e.port))
                        for e in node.endpoints
                    ),
                    k_raft_version_feature=feature,
                )
                for node in self.nodes
            ),
        )

    def encode(self) -> bytes:
        buffer = io.BytesIO()
        write: Any = entity_writer(voters_data.VotersRecord)
        write(buffer, self.record())
        return buffer.getvalue()


def read_voters_record(value: bytes) -> VoterSet:
    record, _ = entity_reader(voters_data.VotersRecord)(value, 0)
    return VoterSet.of(
        VoterNode(
            int(voter.voter_id),
            voter.voter_directory_id,
            tuple(Endpoint(e.name, e.host, int(e.port)) for e in voter.endpoints),
        )
        for voter in record.voters
    )


def kraft_version_record(version: int) -> bytes:
    buffer = io.BytesIO()
    write: Any = entity_writer(KRaftVersionRecord)
    write(buffer, KRaftVersionRecord(version=i16(0), k_raft_version=i16(version)))
    return buffer.getvalue()


class VoterSetHistory:
    """The voter sets the log holds, by the offset of their Voters record, over a base set (the
    static voters, or the one of the snapshot the log starts from)."""

    def __init__(self, static: VoterSet) -> None:
        self._static = static
        self._base = static
        self._dynamic = not static.nodes  # no static voters: they come from the log
        self._changes: list[tuple[int, VoterSet]] = []

    @property
    def dynamic(self) -> bool:
        """True with ``kraft.version`` 1: the voters are in the log, and may change."""
        return self._dynamic or bool(self._changes)

    def latest(self) -> VoterSet:
        return self._changes[-1][1] if self._changes else self._base

    @property
    def last_change_offset(self) -> int | None:
        """The offset of the latest Voters record in the log (None: only the base set)."""
        return self._changes[-1][0] if self._changes else None

    def at(self, end_offset: int) -> VoterSet:
        """The set in effect after every record below ``end_offset``."""
        found = self._base
        for offset, voters in self._changes:
            if offset >= end_offset:
                break
            found = voters
        return found

    def sets_between(self, start: int, end: int) -> list[VoterSet]:
        """Every set in effect at some end offset from ``start`` to ``end``."""
        return [self.at(start), *(voters for at, voters in self._changes if start <= at < end)]

    def add(self, offset: int, voters: VoterSet) -> None:
        self._changes.append((offset, voters))

    def truncate_to(self, offset: int) -> None:
        """The log dropped everything at and above ``offset``."""
        self._changes = [(at, voters) for at, voters in self._changes if at < offset]

    def reset(self, voters: VoterSet | None) -> None:
        """The log restarts from a snapshot holding ``voters`` (None: a static quorum's)."""
        self._changes = []
        self._base = voters if voters is not None else self._static
        self._dynamic = voters is not None or not self._static.nodes
