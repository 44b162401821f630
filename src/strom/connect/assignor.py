"""The group leader's assignment of connectors to workers, without I/O: incremental and
cooperative, as Connect's ``compatible`` protocol (KIP-415), in two rounds.

- A connector stays with the worker that runs it (its metadata's allocation says so), so a
  rebalance moves nothing it need not move. One claimed by two workers stays with the first by
  member id and is revoked from the other; one that no longer exists is revoked.
- Connectors nobody runs (new ones, a departed worker's, revoked ones) go to the least loaded
  workers, at once (Connect waits ``scheduled.rebalance.max.delay.ms`` for a departed worker to
  return; strom does not).
- When the loads still differ by more than one (a worker joined), the busiest workers are asked
  to revoke the difference: they stop those connectors and join again, and the next round hands
  them out as connectors nobody runs. So no connector ever runs on two workers at once.

A connector's tasks go with it: strom runs them as one Spark query."""

from __future__ import annotations

from collections.abc import Mapping

from strom.connect.protocol import CONFIG_MISMATCH, Assignment, WorkerState

__all__ = ["assign"]


def assign(
    members: Mapping[str, WorkerState],
    connectors: Mapping[str, int],
    *,
    leader: str,
    config_offset: int,
) -> dict[str, Assignment]:
    """Each member's assignment: ``members`` by member id, ``connectors`` the task count of
    every connector of the config topic, which the leader read up to ``config_offset``."""
    leader_url = members[leader].url if leader in members else ""
    if any(state.config_offset > config_offset for state in members.values()):
        return {
            member: Assignment(
                leader=leader,
                leader_url=leader_url,
                config_offset=config_offset,
                error=CONFIG_MISMATCH,
            )
            for member in members
        }
    order = sorted(members)
    kept: dict[str, list[str]] = {member: [] for member in order}
    revoked: dict[str, list[str]] = {member: [] for member in order}
    owned: set[str] = set()
    for member in order:
        for name in members[member].allocation.connectors:
            if name in connectors and name not in owned:
                kept[member].append(name)
                owned.add(name)
            else:
                revoked[member].append(name)

    def load(member: str) -> tuple[int, str]:
        return len(kept[member]), member

    for name in sorted(set(connectors) - owned):
        kept[min(order, key=load)].append(name)
    if order:
        pending = {member: len(kept[member]) for member in order}
        while True:
            busiest = max(order, key=lambda m: (pending[m], m))
            idlest = min(order, key=lambda m: (pending[m], m))
            if pending[busiest] - pending[idlest] <= 1:
                break
            revoked[busiest].append(kept[busiest].pop())
            pending[busiest] -= 1
            pending[idlest] += 1  # it gets the connector in the next round
    return {
        member: Assignment(
            leader=leader,
            leader_url=leader_url,
            config_offset=config_offset,
            connectors=tuple(sorted(kept[member])),
            tasks=_tasks(kept[member], connectors),
            revoked_connectors=tuple(sorted(revoked[member])),
            revoked_tasks=_tasks(revoked[member], connectors),
        )
        for member in order
    }


def _tasks(names: list[str], connectors: Mapping[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple((name, task) for name in sorted(names) for task in range(connectors.get(name, 0)))
