"""The fault scenarios of strom's reliability suite (docs/reliability.md): for each, the cluster
it needs, the workload, what the nemesis does and the guarantee the checker holds it to.

Every scenario runs on 3 brokers and 3 controllers (unless it says otherwise), topics with
replication factor 3 and ``min.insync.replicas=2``, and is judged by the same rule: no lost
write, no duplicate (the producers are idempotent), no inconsistent offsets, no aborted read,
and progress once the faults are healed. A scenario's ``faults`` function is the nemesis's
schedule: it strikes and heals until the run's deadline.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal

from strom.testing.chaos.nemesis import (
    DegradeLinks,
    Fault,
    FillDisk,
    Isolate,
    Kill,
    LoseUnflushed,
    Nemesis,
    Pause,
    Reassign,
    ShiftClock,
    SlowLink,
    Stop,
    Target,
    nodes,
)
from strom.testing.chaos.probes import coordinator, leader, partition_states
from strom.testing.cluster import Cluster

__all__ = ["SCENARIOS", "FaultSchedule", "Scenario", "scenario_named"]

WorkloadKind = Literal["queue", "bank", "group"]
PARTITIONS: Final = 3
"""Partitions of every topic a workload uses."""


@dataclass
class FaultSchedule:
    """What a scenario's ``faults`` function gets: the cluster, the nemesis, the topics under
    test, a seeded random source and the deadline to stop striking at."""

    cluster: Cluster
    nemesis: Nemesis
    topic: str
    """The partition-0 owner of this topic is the usual victim."""
    key: str
    """The group id or transactional id whose coordinator a coordinator scenario targets."""
    rng: random.Random
    deadline: float
    create_topic: Callable[[str], None] = field(repr=False, default=lambda _: None)

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds`` (never past the deadline); False once it has passed."""
        time.sleep(max(min(seconds, self.remaining()), 0.0))
        return self.remaining() > 0

    def cycle(self, make: Callable[[], Fault], *, on: float, off: float) -> None:
        """Strike, hold for ``on`` seconds, heal, rest ``off`` seconds; until the deadline
        (the last strike is always healed, even when the deadline passes meanwhile)."""
        while self.remaining() > 0:
            fault = make()
            self.nemesis.start(fault)
            time.sleep(on)
            self.nemesis.heal(fault)
            if not self.wait(off):
                return

    # --- victims -------------------------------------------------------------------------

    def leader(self) -> Target:
        return lambda cluster: [leader(cluster, self.topic, 0)]

    def followers(self, count: int) -> Target:
        def choose(cluster: Cluster) -> list[int]:
            state = partition_states(cluster, self.topic)[0]
            return [b for b in state.replicas if b != state.leader][:count]

        return choose

    def coordinator(self, *, transactional: bool) -> Target:
        return lambda cluster: [coordinator(cluster, self.key, transactional=transactional)]

    def mid_transaction(self, target: Target, process: str, *, timeout: float = 5.0) -> Target:
        """``target``, chosen once ``process`` is inside a transaction (begun, not yet
        committed), so that the strike lands mid-commit."""

        def choose(cluster: Cluster) -> Sequence[int]:
            chosen = target(cluster)
            deadline = time.monotonic() + timeout
            while not self.nemesis.recorder.in_flight("txn", process):
                if time.monotonic() > deadline:
                    break
                time.sleep(0.005)
            return chosen

        return choose

    def active_controller(self) -> Target:
        return lambda cluster: [cluster.active_controller()]


@dataclass(frozen=True)
class Scenario:
    number: int
    name: str
    description: str
    guarantee: str
    faults: Callable[[FaultSchedule], None]
    workload: WorkloadKind = "queue"
    brokers: int = 3
    controllers: int = 3
    network: Literal["loopback", "netns"] = "loopback"
    small_disk: int | None = None
    """Put this broker's data directory on a small tmpfs (:class:`FillDisk`)."""
    clock: bool = False
    """Run the nodes on clocks :class:`ShiftClock` can move."""
    min_acks_after_heal: int = 20


def _leader_kill(s: FaultSchedule) -> None:
    s.cycle(lambda: Kill(s.leader()), on=4, off=4)


def _follower_kill(s: FaultSchedule) -> None:
    s.cycle(lambda: Kill(s.followers(1)), on=4, off=4)


def _two_replicas_down(s: FaultSchedule) -> None:
    def leader_and_follower(cluster: Cluster) -> list[int]:
        state = partition_states(cluster, s.topic)[0]
        follower = next(b for b in state.replicas if b != state.leader)
        return [state.leader, follower]

    s.cycle(lambda: Kill(leader_and_follower), on=5, off=5)


def _isolate_leader(s: FaultSchedule) -> None:
    s.cycle(lambda: Isolate(s.leader()), on=6, off=6)


def _isolate_controller(s: FaultSchedule) -> None:
    s.cycle(lambda: Isolate(s.active_controller()), on=6, off=6)


def _successive_leaders(s: FaultSchedule) -> None:
    """Kill the leader; once another leads, bring the first back and kill the new one."""
    previous: Fault | None = None
    while s.remaining() > 0:
        fault = Kill(s.leader())
        s.nemesis.start(fault)
        if previous is not None:
            s.nemesis.heal(previous)
        previous = fault
        if not s.wait(3):
            break
    if previous is not None:
        s.nemesis.heal(previous)


def _lossy_links(s: FaultSchedule) -> None:
    everyone = nodes(*s.cluster.nodes)

    def degrade() -> Fault:
        return DegradeLinks(
            everyone,
            delay=round(s.rng.uniform(0.1, 1.0), 3),
            loss=round(s.rng.uniform(0.1, 0.5), 3),
            seed=s.rng.randrange(1 << 31),
        )

    s.cycle(degrade, on=6, off=3)


def _controller_kill_while_creating(s: FaultSchedule) -> None:
    number = 0

    def strike_while_creating() -> Fault:
        nonlocal number
        fault = Kill(s.active_controller())
        for _ in range(3):
            s.create_topic(f"{s.topic}-created-{number}")
            number += 1
        return fault

    s.cycle(strike_while_creating, on=4, off=3)


def _pause_leader(s: FaultSchedule) -> None:
    # Longer than broker.session.timeout.ms (4 s in strom.testing's cluster defaults).
    s.cycle(lambda: Pause(s.leader()), on=7, off=5)


def _lose_unflushed(s: FaultSchedule) -> None:
    s.cycle(lambda: LoseUnflushed(s.leader()), on=3, off=6)


def _rolling_restart(s: FaultSchedule) -> None:
    while s.remaining() > 0:
        for node_id in [*s.cluster.controller_ids, *s.cluster.broker_ids]:
            fault = Stop(lambda _, node_id=node_id: [node_id])  # type: ignore[misc]
            s.nemesis.start(fault)
            s.nemesis.heal(fault)
            _wait_in_sync(s)
            if s.remaining() <= 0:
                return


def _wait_in_sync(s: FaultSchedule, timeout: float = 30.0) -> None:
    """Until every replica of the topic is back in its ISR (a rolling restart's pace)."""
    s.cluster.wait_for(
        lambda: all(
            len(state.isr) == len(state.replicas)
            for state in partition_states(s.cluster, s.topic).values()
        ),
        timeout=timeout,
        what=f"every replica of {s.topic} in sync",
    )


def _reassign_while_bouncing(s: FaultSchedule) -> None:
    """Move the topic to broker 4 and back, bouncing broker 2 (a replica in both) meanwhile."""
    placements = [(4, 2, 3), (1, 2, 3)]
    number = 0
    while s.remaining() > 0:
        move = Reassign(s.topic, PARTITIONS, placements[number % 2])
        number += 1
        s.nemesis.start(move)
        bounce = Kill(nodes(2))
        s.nemesis.start(bounce)
        s.wait(3)
        s.nemesis.heal(bounce)
        s.nemesis.heal(move)


def _txn_coordinator_kill(s: FaultSchedule) -> None:
    coordinator_of_worker_0 = s.mid_transaction(s.coordinator(transactional=True), "worker-0")
    s.cycle(lambda: Kill(coordinator_of_worker_0), on=4, off=5)


def _group_coordinator_kill(s: FaultSchedule) -> None:
    s.cycle(lambda: Kill(s.coordinator(transactional=False)), on=4, off=5)


def _follower_disk_full(s: FaultSchedule) -> None:
    victim = s.cluster.broker_ids[-1]
    s.cycle(lambda: FillDisk(lambda _: [victim]), on=6, off=6)


def _slow_follower(s: FaultSchedule) -> None:
    s.cycle(lambda: SlowLink(s.followers(1), rate_kbit=64), on=8, off=4)


def _clock_jumps(s: FaultSchedule) -> None:
    hour_ms = 3_600_000

    def jump() -> Fault:
        return ShiftClock(s.leader(), offset_ms=s.rng.choice([-hour_ms, hour_ms, 10 * hour_ms]))

    s.cycle(jump, on=3, off=2)


_ALWAYS: Final = (
    "no acknowledged write lost, no duplicate, no inconsistent offsets, no aborted read; "
    "writes acknowledged again once the fault heals"
)

SCENARIOS: Final[tuple[Scenario, ...]] = (
    Scenario(
        1,
        "leader-kill",
        "kill -9 the leader of partition 0 during idempotent acks=all produces, restart it",
        _ALWAYS,
        _leader_kill,
    ),
    Scenario(
        2, "follower-kill", "kill -9 a follower of partition 0, restart it", _ALWAYS, _follower_kill
    ),
    Scenario(
        3,
        "two-replicas-down",
        "kill -9 the leader and a follower of partition 0 together (one replica left, below "
        "min.insync.replicas), then restart both",
        _ALWAYS + "; while two are down acks=all writes to partition 0 fail, none is lost",
        _two_replicas_down,
    ),
    Scenario(
        4,
        "isolate-leader",
        "cut the leader of partition 0 off from every other node (nftables in network "
        "namespaces; clients still reach it), then heal",
        _ALWAYS + "; the isolated leader cannot acknowledge acks=all writes alone: it is fenced "
        "and a replica of the ISR takes over",
        _isolate_leader,
        network="netns",
    ),
    Scenario(
        5,
        "successive-leader-kills",
        "kill -9 the leader of partition 0, then the replica elected after it, and so on, "
        "restarting each previous victim",
        _ALWAYS,
        _successive_leaders,
    ),
    Scenario(
        6,
        "controller-kill-during-creates",
        "kill -9 the active controller while topics are being created",
        _ALWAYS + "; every topic whose creation was acknowledged exists afterwards",
        _controller_kill_while_creating,
    ),
    Scenario(
        7,
        "isolate-controller",
        "cut the active controller off from every other node, then heal",
        _ALWAYS + "; the other controllers elect a leader and the cluster goes on",
        _isolate_controller,
        network="netns",
    ),
    Scenario(
        8,
        "pause-leader",
        "SIGSTOP the leader of partition 0 for longer than the broker session timeout, then "
        "SIGCONT it",
        _ALWAYS + "; the paused leader is fenced and steps down, and truncates on return",
        _pause_leader,
    ),
    Scenario(
        9,
        "lose-unflushed",
        "kill -9 the leader of partition 0 and cut its logs back to their last fsynced "
        "offsets (the recovery point checkpoint) before restarting it",
        _ALWAYS + "; the replica refills from the new leader",
        _lose_unflushed,
    ),
    Scenario(
        10,
        "rolling-restart",
        "a controlled restart (SIGTERM) of every controller, then every broker, one at a time "
        "once the partitions are back in sync",
        _ALWAYS,
        _rolling_restart,
    ),
    Scenario(
        11,
        "reassign-while-bouncing",
        "move every partition onto a fourth broker and back (strom partitions reassign) while "
        "kill -9 bounces a broker that stays a replica",
        _ALWAYS + "; every reassignment completes",
        _reassign_while_bouncing,
        brokers=4,
    ),
    Scenario(
        12,
        "txn-coordinator-kill",
        "a consume-transform-produce bank (read_committed, up to 20 transfers per transaction) "
        "while the transaction coordinator of a worker is killed mid-commit",
        _ALWAYS + "; every transfer applied exactly once and atomically; the total stays 0",
        _txn_coordinator_kill,
        workload="bank",
    ),
    Scenario(
        13,
        "group-coordinator-kill",
        "a consumer group committing as it reads, one member leaving and rejoining, while its "
        "group coordinator is killed",
        _ALWAYS + "; committed offsets never go backwards",
        _group_coordinator_kill,
        workload="group",
    ),
    Scenario(
        14,
        "follower-disk-full",
        "the data directory of a follower (on a 64 MB tmpfs) fills up, then is freed",
        _ALWAYS + "; the follower leaves the ISR and catches up once freed",
        _follower_disk_full,
        small_disk=64,
    ),
    Scenario(
        15,
        "clock-jumps",
        "the wall clock of the leader of partition 0 jumps by an hour back or forth, or ten "
        "hours ahead, and back",
        _ALWAYS,
        _clock_jumps,
        clock=True,
    ),
    Scenario(
        16,
        "slow-follower-link",
        "every packet to and from a follower of partition 0 through a 64 kbit/s token bucket "
        "(tc tbf), then at full speed again",
        _ALWAYS + "; the slow follower leaves the ISR and acks=all goes on with the others",
        _slow_follower,
        network="netns",
    ),
    Scenario(
        17,
        "lossy-links",
        "every answer one node gives another (replica fetches, heartbeats, Raft, forwarded "
        "requests) held 0.1-1 s and 10-50% of them lost with their connection (strom's "
        "injectable fault layer), in bursts",
        _ALWAYS + "; replication, heartbeats and elections retry through the loss",
        _lossy_links,
    ),
)


def scenario_named(name: str) -> Scenario:
    """A scenario by name or number."""
    for scenario in SCENARIOS:
        if name in (scenario.name, str(scenario.number)):
            return scenario
    known = ", ".join(s.name for s in SCENARIOS)
    raise KeyError(f"no scenario {name!r}; the scenarios are: {known}")
