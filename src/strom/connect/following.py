"""What a worker of a group follows (no I/O): its part in the group (the connectors the leader
assigned it, whether it leads, where the leader and each connector's worker answer), and the
config topic records it has still to act on for the connectors it runs. ``Herder`` keeps one
``GroupRole``; alone (the mirror's dedicated mode) the role runs every connector and leads."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from strom.connect.errors import ConnectError
from strom.connect.protocol import Assignment

__all__ = ["GroupRole"]


@dataclass
class GroupRole:
    """One worker's part in its group, as the last assignment gave it."""

    assigned: frozenset[str] | None = None
    """The connectors the group assigned to this worker; None: every one (alone)."""
    is_leader: bool = True
    leader_url: str | None = None
    owner_urls: dict[str, str] = field(default_factory=dict)
    """The leader's: each connector's worker URL, for the task calls it forwards."""
    changed: set[str] = field(default_factory=set)
    """Connectors a config record touched since the worker last followed them."""
    restarts: dict[str, tuple[bool, bool]] = field(default_factory=dict)
    """Restart requests read (include-tasks, only-failed), not yet carried out."""

    @property
    def alone(self) -> bool:
        return self.assigned is None

    def join(self) -> None:
        """In a group: nothing runs here until the group assigns it."""
        self.assigned, self.is_leader = frozenset(), False

    def runs(self, name: str) -> bool:
        return self.assigned is None or name in self.assigned

    def take(
        self, assignment: Assignment, *, is_leader: bool, owner_urls: Mapping[str, str]
    ) -> tuple[set[str], set[str]]:
        """Take a new assignment: the connectors it revokes and those it newly gives."""
        revoked = set(assignment.revoked_connectors)
        if self.assigned is not None:
            revoked |= self.assigned - set(assignment.connectors)
        new = set(assignment.connectors) - (self.assigned or frozenset())
        self.assigned = frozenset(assignment.connectors)
        self.is_leader = is_leader
        self.leader_url = assignment.leader_url or None
        self.owner_urls = dict(owner_urls)
        return revoked, new

    def drop(self) -> list[str]:
        """Run nothing and know no leader (the group moved on without this worker); the
        connectors that ran here."""
        dropped = sorted(self.assigned or ())
        self.assigned, self.is_leader, self.leader_url = frozenset(), False, None
        return dropped

    def forward_to(self, task_of: str | None = None) -> str | None:
        """Where a request must go: None here, else a worker's URL (the leader's for a write,
        the one that runs ``task_of`` for a task call); a 409 while no leader is known."""
        if self.assigned is None:
            return None
        if task_of is not None:
            if task_of in self.assigned:
                return None
            if self.is_leader:
                url = self.owner_urls.get(task_of)
                if url is None:
                    raise ConnectError(409, f"Connector {task_of} is not assigned to any worker")
                return url
        if self.is_leader:
            return None
        if self.leader_url is None:
            raise ConnectError(
                409,
                "Cannot complete request momentarily due to no known leader URL, likely because"
                " a rebalance was underway.",
            )
        return self.leader_url

    def pending(self) -> tuple[list[str], list[tuple[str, tuple[bool, bool]]]]:
        """The connectors to follow and the restarts to make, that this worker runs; both
        forgotten here (the caller holds the lock the records are applied under)."""
        changed, self.changed = self.changed, set()
        restarts, self.restarts = self.restarts, {}
        return (
            [name for name in sorted(changed) if self.runs(name)],
            [(name, how) for name, how in sorted(restarts.items()) if self.runs(name)],
        )
