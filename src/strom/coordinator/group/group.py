"""A classic group: its members, generation, leader, chosen protocol and committed offsets
(Kafka's ``ClassicGroup`` and ``ClassicGroupMember``). Plain data with the rules that need no
clock or I/O; :mod:`strom.coordinator.group.coordinator` drives it."""

from __future__ import annotations

import struct
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from strom.coordinator.group.records import GroupMetadataValue, OffsetCommitValue
from strom.coordinator.group.state import GroupState, check_transition

__all__ = ["ClassicGroup", "GroupMember", "OffsetAndMetadata", "subscribed_topics"]

CONSUMER_PROTOCOL_TYPE = "consumer"


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    """A committed offset, as ``OffsetCommitValue`` stores it."""

    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp: int
    expire_timestamp: int = -1

    @classmethod
    def of_value(cls, value: OffsetCommitValue) -> OffsetAndMetadata:
        return cls(
            value.offset,
            value.leader_epoch,
            value.metadata,
            value.commit_timestamp,
            value.expire_timestamp,
        )


@dataclass(slots=True, eq=False)
class GroupMember:
    """One member; ``awaiting_join``/``awaiting_sync`` hold the reply of its parked request."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]
    """(name, metadata) in the member's order of preference."""
    assignment: bytes = b""
    awaiting_join: Callable[[Any], None] | None = None
    awaiting_sync: Callable[[Any], None] | None = None
    is_new: bool = False

    def metadata(self, protocol: str) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        raise KeyError(protocol)

    def matches(self, protocols: Iterable[tuple[str, bytes]]) -> bool:
        return tuple(protocols) == self.protocols

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among ``candidates``."""
        return next(name for name, _ in self.protocols if name in candidates)


@dataclass(slots=True, eq=False)
class ClassicGroup:
    group_id: str
    state: GroupState = GroupState.EMPTY
    state_timestamp: int = -1
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, GroupMember] = field(default_factory=dict)
    """member id -> member, in join order (the first becomes leader when the leader leaves)."""
    static_members: dict[str, str] = field(default_factory=dict)
    """group.instance.id -> member id."""
    pending_members: set[str] = field(default_factory=set)
    """Member ids handed out with MEMBER_ID_REQUIRED, not joined yet."""
    pending_sync: set[str] = field(default_factory=set)
    """Members of this generation that have not sent SyncGroup yet."""
    offsets: dict[tuple[str, int], OffsetAndMetadata] = field(default_factory=dict)
    initial_join_deadline: int | None = None
    """While the initial rebalance delay runs: the latest it may be pushed to."""

    def load_metadata(self, value: GroupMetadataValue | None) -> None:
        """Become what a ``GroupMetadataValue`` read back says (None: a tombstone)."""
        self.members.clear()
        self.static_members.clear()
        self.leader_id = None
        if value is None:
            self.state, self.generation, self.protocol_name = GroupState.EMPTY, 0, None
            return
        self.generation = value.generation
        self.protocol_type = value.protocol_type
        self.protocol_name = value.protocol
        self.state_timestamp = value.current_state_timestamp
        for stored in value.members:
            protocol = value.protocol or ""
            self.add_member(
                GroupMember(
                    member_id=stored.member_id,
                    group_instance_id=stored.group_instance_id,
                    client_id=stored.client_id,
                    client_host=stored.client_host,
                    rebalance_timeout_ms=stored.rebalance_timeout
                    if stored.rebalance_timeout >= 0
                    else stored.session_timeout,
                    session_timeout_ms=stored.session_timeout,
                    protocol_type=value.protocol_type,
                    protocols=((protocol, stored.subscription),),
                    assignment=stored.assignment,
                )
            )
        self.leader_id = value.leader if value.leader in self.members else self.leader_id
        self.state = GroupState.STABLE if self.members else GroupState.EMPTY

    def transition_to(self, target: GroupState, now_ms: int) -> None:
        check_transition(self.state, target)
        self.state = target
        self.state_timestamp = now_ms

    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    @property
    def size(self) -> int:
        return len(self.members) + len(self.pending_members)

    def add_member(self, member: GroupMember) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.pending_members.discard(member.member_id)

    def remove_member(self, member_id: str) -> GroupMember | None:
        member = self.members.pop(member_id, None)
        if member is None:
            return None
        if member.group_instance_id is not None:
            self.static_members.pop(member.group_instance_id, None)
        self.pending_sync.discard(member_id)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        return member

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> GroupMember:
        """The static member ``instance_id`` continues under ``new_id`` (same place in order)."""
        member = self.members[old_id]
        member.member_id = new_id
        self.members = {new_id if k == old_id else k: v for k, v in self.members.items()}
        self.static_members[instance_id] = new_id
        if self.leader_id == old_id:
            self.leader_id = new_id
        if old_id in self.pending_sync:
            self.pending_sync.discard(old_id)
            self.pending_sync.add(new_id)
        return member

    def supports_protocols(self, protocol_type: str, protocols: Iterable[str]) -> bool:
        """Kafka's rule: a new group takes any non-empty type and list; a group with members
        needs the same type and at least one protocol every member supports."""
        names = set(protocols)
        if not self.members:
            return bool(protocol_type) and bool(names)
        return protocol_type == self.protocol_type and bool(names & self.candidate_protocols())

    def candidate_protocols(self) -> set[str]:
        """The protocols every member supports."""
        members = iter(self.members.values())
        candidates = {name for name, _ in next(members).protocols}
        for member in members:
            candidates &= {name for name, _ in member.protocols}
        return candidates

    def select_protocol(self) -> str:
        """Each member votes for its most preferred candidate; the most votes win (ties go to
        the candidate first voted for)."""
        candidates = self.candidate_protocols()
        votes = Counter(member.vote(candidates) for member in self.members.values())
        return votes.most_common(1)[0][0]

    def all_members_joined(self) -> bool:
        return not self.pending_members and all(
            m.awaiting_join is not None for m in self.members.values()
        )

    def max_rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def subscribed_topics(self) -> set[str] | None:
        """The topics the members of a consumer group subscribe to in the chosen protocol
        (None when it cannot be told: another protocol type, or unreadable metadata)."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE or self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            try:
                topics.update(subscribed_topics(member.metadata(self.protocol_name)))
            except (KeyError, ValueError):
                return None
        return topics

    def is_subscribed_to(self, topic: str) -> bool:
        """True when the group's members subscribe to ``topic`` (False when it cannot be told)."""
        topics = self.subscribed_topics()
        return topics is not None and topic in topics


_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


def subscribed_topics(metadata: bytes) -> list[str]:
    """The topics of a ``ConsumerProtocolSubscription`` (any version: they lead the struct).

    Raises ValueError for bytes that are not one.
    """
    try:
        (version,) = _INT16.unpack_from(metadata, 0)
        if version < 0:
            raise ValueError(f"subscription version {version}")
        (count,) = _INT32.unpack_from(metadata, 2)
        position = 6
        topics: list[str] = []
        for _ in range(count):
            (length,) = _INT16.unpack_from(metadata, position)
            position += 2
            topics.append(metadata[position : position + length].decode("utf-8"))
            position += length
    except (struct.error, UnicodeDecodeError) as error:
        raise ValueError(f"not a consumer subscription: {error}") from None
    return topics
