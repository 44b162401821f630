"""A voter that lost its leader's connection: the pre-vote round it runs (KIP-996).

A leader whose process dies closes its connections at once. A voter following it that sees its
connection close (``RaftClient.connection_closed``) does not wait out the fetch timeout: after a
short random delay it asks the other voters for pre-votes, a Vote with ``PreVote`` set for the
epoch it would stand in, which changes nothing on the voters. A voter grants one when the asker's
log is at least as up to date as its own and it has not heard from a leader within the fetch
timeout itself (or its own connection to the leader closed too); a leader grants none. A majority
of grants makes the voter stand for election. A lost round changes nothing: the voter goes on
following until its fetch timeout, so a voter whose connection flaps cannot disrupt a healthy
leader (the others, which still hear from it, refuse).
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Prospect"]


@dataclass(slots=True)
class Prospect:
    """A follower's pre-vote round after the connection to its leader closed."""

    leader_id: int
    start_ms: int
    """When the round starts (the close plus a random delay)."""
    grants: dict[int, bool] = field(default_factory=dict)
    """The answers so far, by voter (this node's own grant included)."""
    lost: bool = False
    """The round ended without a majority (the node keeps following)."""

    def outcome(self, voters: frozenset[int]) -> bool | None:
        """True: a majority granted; False: a majority can no longer grant (the leader never
        does); None: undecided."""
        majority = len(voters) // 2 + 1
        granted = sum(1 for node, grant in self.grants.items() if grant and node in voters)
        if granted >= majority:
            return True
        rejected = sum(1 for node, grant in self.grants.items() if not grant and node in voters)
        if len(voters - {self.leader_id}) - rejected < majority:
            return False
        return None
