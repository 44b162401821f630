"""The election state of one node and the roles it moves through (Kafka's ``QuorumState``).

The roles, and what each does:

* **Unattached**: knows no leader of its epoch. A voter stands for election when its election
  timer runs out (and may grant its one vote of the epoch meanwhile); an observer asks the voters
  (a fetch) who leads.
* **Candidate**: voted for itself in a new epoch and asks the other voters; a majority of grants
  makes it leader; a lost or timed-out election waits a random backoff, then tries the next epoch.
* **Leader**: appends the records of its epoch, answers fetches, advances the high watermark,
  and resigns when a majority has not fetched within the check-quorum time.
* **Follower**: fetches from the leader of its epoch; a voter whose fetches go unanswered for the
  fetch timeout stands for election, an observer goes back to Unattached.
* **Resigned**: a leader that gave up (shutdown, failed check quorum, or a restart: a node that
  was leader restarts Resigned in its epoch, since it cannot know what it committed); it tells the
  others (EndQuorumEpoch) and stands for election when its timer runs out (or, removed from the
  voters, goes back to Unattached as an observer).

Every transition is a row of :data:`TRANSITIONS`, named by what triggers it, and the new
election state (epoch, leader, vote) is persisted through the :class:`QuorumStateStore` before the
node acts in it, so that a restart never votes twice in one epoch.
"""

from __future__ import annotations

import enum
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Protocol

__all__ = [
    "TRANSITIONS",
    "ElectionState",
    "FileQuorumStateStore",
    "IllegalTransition",
    "MemoryQuorumStateStore",
    "QuorumStateStore",
    "Role",
    "Trigger",
    "next_role",
]


class Role(enum.Enum):
    UNATTACHED = "unattached"
    CANDIDATE = "candidate"
    LEADER = "leader"
    FOLLOWER = "follower"
    RESIGNED = "resigned"


class Trigger(enum.Enum):
    START = "the node starts"
    HIGHER_EPOCH = "a request or response names a newer epoch without a leader"
    LEADER_KNOWN = "a leader of the current or a newer epoch makes itself known"
    GRANT_VOTE = "this voter grants its vote of the epoch to a candidate"
    ELECTION_TIMEOUT = "the election timer runs out"
    FETCH_TIMEOUT = "the leader has not answered fetches for the fetch timeout"
    WON_ELECTION = "a majority of voters granted their votes"
    RESIGN = "the leader gives up (shutdown, a failed check quorum, or its removal committed)"
    LEFT_VOTERS = "a resigned node's timer runs out and it is no longer a voter (KIP-853)"


TRANSITIONS: Final[dict[tuple[Role, Trigger], Role]] = {
    (Role.UNATTACHED, Trigger.HIGHER_EPOCH): Role.UNATTACHED,
    (Role.UNATTACHED, Trigger.LEADER_KNOWN): Role.FOLLOWER,
    (Role.UNATTACHED, Trigger.GRANT_VOTE): Role.UNATTACHED,
    (Role.UNATTACHED, Trigger.ELECTION_TIMEOUT): Role.CANDIDATE,
    (Role.CANDIDATE, Trigger.HIGHER_EPOCH): Role.UNATTACHED,
    (Role.CANDIDATE, Trigger.LEADER_KNOWN): Role.FOLLOWER,
    (Role.CANDIDATE, Trigger.ELECTION_TIMEOUT): Role.CANDIDATE,
    (Role.CANDIDATE, Trigger.WON_ELECTION): Role.LEADER,
    (Role.LEADER, Trigger.HIGHER_EPOCH): Role.UNATTACHED,
    (Role.LEADER, Trigger.LEADER_KNOWN): Role.FOLLOWER,
    (Role.LEADER, Trigger.RESIGN): Role.RESIGNED,
    (Role.FOLLOWER, Trigger.HIGHER_EPOCH): Role.UNATTACHED,
    (Role.FOLLOWER, Trigger.LEADER_KNOWN): Role.FOLLOWER,
    (Role.FOLLOWER, Trigger.FETCH_TIMEOUT): Role.CANDIDATE,
    (Role.FOLLOWER, Trigger.ELECTION_TIMEOUT): Role.UNATTACHED,
    (Role.RESIGNED, Trigger.HIGHER_EPOCH): Role.UNATTACHED,
    (Role.RESIGNED, Trigger.LEADER_KNOWN): Role.FOLLOWER,
    (Role.RESIGNED, Trigger.ELECTION_TIMEOUT): Role.CANDIDATE,
    (Role.RESIGNED, Trigger.LEFT_VOTERS): Role.UNATTACHED,
}
"""(role, trigger) -> the next role. Observers never become candidates: an observer's fetch
timeout is ``FOLLOWER, ELECTION_TIMEOUT`` (back to Unattached, to find the leader anew)."""


class IllegalTransition(RuntimeError):
    """A move the table does not allow: a bug, never an input error."""


def next_role(role: Role, trigger: Trigger) -> Role:
    try:
        return TRANSITIONS[(role, trigger)]
    except KeyError:
        raise IllegalTransition(f"{role.value} cannot move on {trigger.name}") from None


@dataclass(frozen=True, slots=True)
class ElectionState:
    """What survives a restart: the epoch, its leader if known, the vote this node cast in it."""

    epoch: int
    leader_id: int | None = None
    voted_id: int | None = None


class QuorumStateStore(Protocol):
    def read(self) -> ElectionState | None:
        """The stored state, or None when there is none yet."""
        ...

    def write(self, state: ElectionState, voters: frozenset[int]) -> None:
        """Store durably before the node's next request or answer leaves: the file store
        fsyncs before returning; the server's (``strom.server.raft.raft_disk``) fsyncs on a worker
        thread and its shell holds the messages until then."""
        ...


class MemoryQuorumStateStore:
    """For the simulation and unit tests: survives a simulated crash, not the process."""

    def __init__(self) -> None:
        self.state: ElectionState | None = None

    def read(self) -> ElectionState | None:
        return self.state

    def write(self, state: ElectionState, voters: frozenset[int]) -> None:
        self.state = state


class FileQuorumStateStore:
    """Kafka's ``quorum-state`` file: JSON of ``QuorumStateData`` (version 0), replaced
    atomically (a temporary file, fsync, rename, fsync of the directory)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> ElectionState | None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as error:
            raise ValueError(f"cannot read {self.path}: {error}") from None
        try:
            leader = int(data["leaderId"])
            voted = int(data["votedId"])
            return ElectionState(
                epoch=int(data["leaderEpoch"]),
                leader_id=None if leader < 0 else leader,
                voted_id=None if voted < 0 else voted,
            )
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"{self.path} is not a quorum-state file: {error}") from None

    def write(self, state: ElectionState, voters: frozenset[int]) -> None:
        data = {
            "clusterId": "",
            "leaderId": -1 if state.leader_id is None else state.leader_id,
            "leaderEpoch": state.epoch,
            "votedId": -1 if state.voted_id is None else state.voted_id,
            "appliedOffset": 0,
            "currentVoters": [{"voterId": voter} for voter in sorted(voters)],
            "data_version": 0,
        }
        temporary = self.path.with_name(self.path.name + ".tmp")
        with temporary.open("w", encoding="utf-8") as file:
            json.dump(data, file)
            file.flush()
            os.fsync(file.fileno())
        temporary.replace(self.path)
        directory = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(directory)
        finally:
            os.close(directory)
