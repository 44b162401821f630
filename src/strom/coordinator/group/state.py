"""The states of a classic group and the transitions between them (Kafka's ``ClassicGroupState``).

A group moves only along :data:`VALID_PREVIOUS_STATES`; :func:`check_transition` refuses
anything else, so a bug shows up as an error instead of a silently corrupt group.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

__all__ = ["VALID_PREVIOUS_STATES", "GroupState", "check_transition"]


class GroupState(enum.Enum):
    """The value is the name Kafka's DescribeGroups and ListGroups give the state."""

    EMPTY = "Empty"
    """No members, but perhaps committed offsets (a simple consumer group commits without ever
    joining). JoinGroup starts a rebalance (PreparingRebalance); offsets of an Empty group
    expire after ``offsets.retention.minutes``; the group becomes Dead when its last offset is
    gone or it is deleted. SyncGroup and Heartbeat answer UNKNOWN_MEMBER_ID."""

    PREPARING_REBALANCE = "PreparingRebalance"
    """Waiting for every known member to (re)join, until the rebalance timeout (the largest
    of the members') or, for a new group, the initial rebalance delay. JoinGroup is held
    until then; Heartbeat and SyncGroup answer REBALANCE_IN_PROGRESS; commits from the
    previous generation are still accepted. When the join completes: members that did not
    rejoin are removed, the generation grows, a protocol is chosen, and every held JoinGroup
    is answered (the leader with the members' metadata) -> CompletingRebalance, or Empty
    when no member is left."""

    COMPLETING_REBALANCE = "CompletingRebalance"
    """Waiting for the leader's SyncGroup with the assignment. Followers' SyncGroups are
    held; Heartbeat keeps the session alive (NONE); commits answer REBALANCE_IN_PROGRESS.
    The leader's SyncGroup stores the assignment and answers every held SyncGroup ->
    Stable. A member leaving or joining anew, or a member's session expiring -> back to
    PreparingRebalance."""

    STABLE = "Stable"
    """Every member has its assignment. Heartbeats keep sessions alive; commits of the
    current generation are accepted; a JoinGroup from the leader or with changed metadata,
    a new member, a leave or an expired session -> PreparingRebalance."""

    DEAD = "Dead"
    """No members and no offsets: the group is being removed (deleted, expired, or its
    ``__consumer_offsets`` partition unloaded). Every request sees it as unknown."""

    @classmethod
    def parse(cls, name: str) -> GroupState | None:
        """The state of a ListGroups states filter entry (case-insensitive), or None."""
        for state in cls:
            if state.value.lower() == name.lower():
                return state
        return None


VALID_PREVIOUS_STATES: Final[Mapping[GroupState, frozenset[GroupState]]] = MappingProxyType(
    {
        GroupState.EMPTY: frozenset({GroupState.PREPARING_REBALANCE}),
        GroupState.PREPARING_REBALANCE: frozenset(
            {GroupState.EMPTY, GroupState.STABLE, GroupState.COMPLETING_REBALANCE}
        ),
        GroupState.COMPLETING_REBALANCE: frozenset({GroupState.PREPARING_REBALANCE}),
        GroupState.STABLE: frozenset({GroupState.COMPLETING_REBALANCE}),
        GroupState.DEAD: frozenset(
            {
                GroupState.EMPTY,
                GroupState.PREPARING_REBALANCE,
                GroupState.COMPLETING_REBALANCE,
                GroupState.STABLE,
                GroupState.DEAD,
            }
        ),
    }
)
"""state -> the states a group may enter it from."""


def check_transition(current: GroupState, target: GroupState) -> None:
    """Raise ValueError unless a group in ``current`` may move to ``target``."""
    if current not in VALID_PREVIOUS_STATES[target]:
        raise ValueError(f"a group cannot move from {current.value} to {target.value}")
