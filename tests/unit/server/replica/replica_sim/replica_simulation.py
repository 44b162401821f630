"""A seeded, virtual-time simulation of three brokers and a scripted controller over the real
replica code: each broker's ``ReplicaManager`` (its ``Partition``, the produce and fetch
purgatories) over a real ``LogManager`` on disk, its real ``ReplicaFetcherManager`` and
``AlterPartitionManager``, and its real group and transaction coordinator runtimes (loaded
and unloaded by leader epoch as the leadership of ``__consumer_offsets`` and
``__transaction_state`` moves, the markers written by the real ``txn_markers``), all on one
``ManualTimer`` (``sim_broker``). Clients write to ``orders-0``, commit a group's offsets and
run transactions over ``orders-0`` and ``orders-1`` (``sim_clients``).

The controller (``sim_controller``) commits metadata records (broker registrations, fencing,
ISR and leader changes) and publishes them to each broker, which replays what it has not seen
as one delta into ``ReplicaManager.apply_metadata`` and hands the outcome to its fetchers. It
checks each AlterPartition as Kafka's controller does and elects leaders from the ISR, else
from KIP-966's eligible leader replicas.

Faults, by seed (``sim_faults``): messages between brokers and the controller dropped, delayed
(and so reordered) and duplicated; AlterPartition answers lost or late; brokers that crash
(keeping their log, or losing an unflushed tail), that restart in a new broker epoch, and that
are cut off from the cluster while clients still write to them.

Invariants (``sim_invariants``) are checked after every event; at the end, with every broker
back and the network quiet, the cluster must take writes again, every transaction must be
decided on every partition it wrote to, and a follower cut off then
must stop holding the high watermark back once the controller fenced it, long before
``replica.lag.time.max.ms`` (the cluster-wide stall of issue 25 part 3). A failure raises
:class:`InvariantViolated` naming its seed; ``simulate_replicas.py --seed N`` replays it.
"""

from __future__ import annotations

import asyncio
import random
import tempfile
from collections.abc import Callable
from pathlib import Path

from sim_broker import SimBroker
from sim_clients import CLIENT_TIMEOUT_MS, TXN_TIMEOUT_MS, SimClients
from sim_controller import BROKERS, PARTITIONS, TP, SimController
from sim_faults import (
    LAG_MS,
    METADATA_PUBLISH_MS,
    PRODUCE_TIMEOUT_MS,
    SESSION_TIMEOUT_MS,
    Faults,
    Network,
)
from sim_invariants import Batch, Invariants, InvariantViolated

from strom.common import ErrorCode, TopicPartition
from strom.common.clock import ManualClock
from strom.common.timer import ManualTimer
from strom.config import ServerConfig
from strom.protocol.batch import scan_batches
from strom.protocol.records import Record, build_batch

__all__ = ["InvariantViolated", "Simulation", "run_seed"]

STALL_BOUND_MS = SESSION_TIMEOUT_MS + 3 * METADATA_PUBLISH_MS
"""How soon after a follower is cut off a write must be answered once the network is quiet:
its session ends, the controller fences it and publishes, well before the lag time."""
assert STALL_BOUND_MS < LAG_MS


class Simulation:
    """Three brokers, the controller and a producing client over one seed (see the module
    doc)."""

    def __init__(self, seed: int, root: Path, steps: int) -> None:
        self.seed = seed
        self.root = root
        self.steps = steps
        self.rng = random.Random(seed)
        self.clock = ManualClock()
        self.timer = ManualTimer(self.clock)
        self.faults = Faults.of(self.rng)
        self.network = Network(self.rng, self.timer, self.faults)
        self.config = ServerConfig(
            {
                "replica.lag.time.max.ms": str(LAG_MS),
                "min.insync.replicas": str(self.faults.min_isr),
                "offsets.commit.timeout.ms": str(PRODUCE_TIMEOUT_MS),
                "request.timeout.ms": str(PRODUCE_TIMEOUT_MS),
                "transaction.abort.timed.out.transaction.cleanup.interval.ms": str(
                    TXN_ABORT_CHECK_MS
                ),
            }
        )
        self.controller = SimController(self)
        self.brokers = {b: SimBroker(self, b) for b in BROKERS}
        self.invariants = Invariants(self)
        self.clients = SimClients(self)
        self.answered: dict[Batch, ErrorCode] = {}
        """acks=all writes answered so far, with their outcome."""
        self.values = 0
        self.step = 0

    # --- the run -----------------------------------------------------------------------------

    async def run(self) -> None:
        for broker in self.brokers.values():
            broker.start(self.controller.register(broker.node_id))
            self.controller.unfence(broker.node_id)
        self.controller.create_topic()
        self._every(METADATA_PUBLISH_MS, self._controller_tick)
        try:
            for step in range(self.steps):
                self.step = step
                self.rng.choices(self._actions, self._weights)[0](self)
                await _settle()
                await self._advance(self.rng.randint(1, 60))
                if self.step % 5 == 0:
                    self.invariants.check_logs()
                    self.invariants.check_offsets()
                    self.invariants.check_transactions()
            await self._recover()
            await self._recover_coordinators()
            await self._probe_stall()
        finally:
            await self.clients.stop()
            for broker in self.brokers.values():
                if broker.alive:
                    broker.crash()
            await _settle()

    async def _advance(self, ms: int) -> None:
        """Run the timers ``ms`` ahead, one due callback at a time, letting the tasks it woke
        run and checking the invariants after each."""
        until = self.clock.monotonic_ms() + ms
        while (due := self.timer.next_due_ms()) is not None and due <= until:
            self.timer.advance_to(due)
            await _settle()
            self.invariants.check()
        self.timer.advance_to(until)

    async def _advance_until(self, done: Callable[[], bool], limit_ms: int) -> None:
        """:meth:`_advance` a little at a time until ``done()`` or ``limit_ms`` passed."""
        until = self.clock.monotonic_ms() + limit_ms
        while not done() and self.clock.monotonic_ms() < until:
            await self._advance(min(10, until - self.clock.monotonic_ms()))

    def _every(self, period_ms: int, task: Callable[[], object]) -> None:
        def tick() -> None:
            task()
            self.timer.call_later(period_ms, tick)

        self.timer.call_later(period_ms, tick)

    def _controller_tick(self) -> None:
        self.controller.heartbeats()
        self.controller.publish()

    # --- the end: liveness -------------------------------------------------------------------

    async def _recover(self) -> None:
        """Every broker back, the network quiet: the replicas converge and the leader takes
        an acks=all write."""
        self.faults = self.network.faults = self.faults.quiet()
        await self._heal()
        replicas = BROKERS[: self.faults.replication_factor]

        def converged() -> bool:
            registration = self.controller.registration
            leader = self.brokers.get(registration.leader)
            return (
                leader is not None
                and leader.leads() == registration.leader_epoch
                and registration.isr == leader.leader_isr() == replicas
            )

        await self._advance_until(converged, 4 * LAG_MS)
        self.invariants.check_logs()
        leader = self.brokers[self.controller.registration.leader]
        if not converged():
            self.invariants.violated(
                f"no recovery: broker {leader.node_id} leads epoch {leader.leads()}, ISR "
                f"{self.controller.registration.isr} of {replicas}"
            )
        batch = self._produce_to(leader)
        await self._advance_until(lambda: batch in self.answered, 2 * FETCH_ROUND_MS)
        if batch is None or self.answered.get(batch) != ErrorCode.none:
            self.invariants.violated(
                f"no recovery: a write to leader {leader.node_id} was "
                f"answered {self.answered.get(batch) if batch else None}"
            )

    async def _recover_coordinators(self) -> None:
        """With the network quiet: the group coordinator loads and still has the last
        acknowledged commit; every transaction is decided (an open one times out and is
        aborted) and atomic on every partition it wrote to."""
        await self._advance_until(lambda: not self.clients.tasks, 2 * CLIENT_TIMEOUT_MS)
        await self._advance_until(self.invariants.check_offsets, 4 * LAG_MS)
        if not self.invariants.check_offsets():
            self.invariants.violated("no recovery: the group coordinator did not load")
        await self._advance_until(
            self.invariants.transactions_settled,
            TXN_TIMEOUT_MS + 2 * TXN_ABORT_CHECK_MS + 2 * FETCH_ROUND_MS,
        )
        self.invariants.check_transactions(final=True)

    async def _probe_stall(self) -> None:
        """A follower cut off from a quiet, converged cluster: once the controller fences it
        (after the session timeout) the leader's next write is answered, not held back for
        the lag time by a replica that is out of the ISR and fenced (Kafka's
        ``shouldWaitForReplicaToJoinIsr``; issue 25 part 3)."""
        leader = self.brokers[self.controller.registration.leader]
        follower = next(b for b in self.controller.registration.isr if b != leader.node_id)
        self.cut(follower, at_least_ms=4 * LAG_MS)
        batch = self._produce_to(leader)
        assert batch is not None
        await self._advance_until(lambda: batch in self.answered, STALL_BOUND_MS)
        if batch not in self.answered:
            self.invariants.violated(
                f"broker {follower} was cut off and fenced, but leader {leader.node_id} has "
                f"not answered a write {STALL_BOUND_MS} ms later (ISR "
                f"{self.controller.registration.isr}, lag time {LAG_MS} ms)"
            )

    # --- actions -----------------------------------------------------------------------------

    def _produce(self) -> None:
        """A client writes one batch (acks=all mostly, else acks=1) to the broker it thinks
        leads."""
        registration = self.controller.registration
        draw = self.rng.random()
        if self.network.cut_off and draw < 0.3:  # a client on stale metadata
            broker = self.brokers[next(iter(self.network.cut_off))]
        elif registration.leader in self.brokers and draw < 0.8:
            broker = self.brokers[registration.leader]
        else:
            broker = self.brokers[self.rng.choice(BROKERS)]
        if broker.alive:
            self._produce_to(broker, acks=-1 if self.rng.random() < 0.8 else 1)

    def _produce_to(self, broker: SimBroker, *, acks: int = -1) -> Batch | None:
        """One batch of a few records; the acks=all batch appended, if it was."""
        self.values += 1
        value = f"v{self.values}-".encode()
        count = self.rng.randint(1, 3)
        records = [Record(i, 1_000, None, value + str(i).encode()) for i in range(count)]
        data = build_batch(records)
        [(_, result)] = broker.manager.append_to_local_log([(TP, data)], required_acks=acks)
        if result.error != ErrorCode.none or acks == 1:
            return None
        [(_, header)], _ = scan_batches(data)
        batch = (result.base_offset, result.last_offset, header.crc)
        life = broker.life

        def answered(outcomes: dict[TopicPartition, ErrorCode]) -> None:
            self.answered[batch] = outcomes[TP]
            if outcomes[TP] == ErrorCode.none and broker.life == life:
                self.invariants.acknowledged(broker, batch)

        broker.manager.when_acknowledged(
            {TP: result.last_offset + 1}, timeout_ms=PRODUCE_TIMEOUT_MS, callback=answered
        )
        return batch

    def _commit_offset(self) -> None:
        self.clients.commit_offset()

    def _transact(self) -> None:
        self.clients.transact()

    def _crash(self, *, lose: bool = False) -> None:
        alive = [
            b for b in self.brokers.values() if b.alive and b.node_id not in self.network.cut_off
        ]
        if len(alive) < 2:
            return
        broker = self.rng.choice(alive)
        if lose and any(
            self.controller.registration_of(tp).isr == (broker.node_id,) for tp in PARTITIONS
        ):
            return  # unflushed data lost by a replica the controller may elect: Kafka's limit too
        broker.crash()
        if lose:
            broker.lose = self.rng.randint(1, 5)
            self.controller.fence(broker.node_id, unclean=True)  # it must rejoin from scratch
            if not self.faults.replica_epochs:
                broker.restart_after = len(self.controller.log)

    def _crash_losing_unflushed(self) -> None:
        self._crash(lose=True)

    def _restart(self) -> None:
        """A dead broker starts again; without broker epochs in fetches (before KIP-903) one
        that lost data only once every broker knows it was fenced, or a leader still seeing
        its previous life caught up may take it back into the ISR, a known hole of those
        versions, not one of the code under test."""
        known = min((b.applied for b in self.brokers.values() if b.alive), default=0)
        dead = [b for b in self.brokers.values() if not b.alive and b.restart_after <= known]
        if dead:
            broker = self.rng.choice(dead)
            broker.start(self.controller.register(broker.node_id), lose=broker.lose)
            self.controller.unfence(broker.node_id)
            if broker.lose and not self.faults.replica_epochs:
                # and it follows only once every broker knows its new registration (the same
                # hole, from the follower's side)
                broker.hold_metadata_until = len(self.controller.log)
            broker.lose = broker.restart_after = 0

    def _cut_off(self) -> None:
        self.cut(self.rng.choice(BROKERS))

    def cut(self, broker_id: int, *, at_least_ms: int = 200) -> None:
        """The broker loses the network (clients still reach it) for up to a few session
        timeouts."""
        if not self.network.cut_off:
            self.network.cut_off.add(broker_id)
            lasts = self.rng.randint(at_least_ms, max(at_least_ms, 3 * SESSION_TIMEOUT_MS))
            self.timer.call_later(lasts, self._heal_cut)

    def _heal_cut(self) -> None:
        for broker_id in list(self.network.cut_off):
            self.network.cut_off.discard(broker_id)
            if self.brokers[broker_id].alive:
                self.controller.last_heard[broker_id] = self.clock.monotonic_ms()
                self.controller.unfence(broker_id)

    async def _heal(self) -> None:
        self._heal_cut()
        while any(not b.alive for b in self.brokers.values()):
            self._restart()
            await self._advance(METADATA_PUBLISH_MS)

    def _nothing(self) -> None:
        pass

    _actions = (
        _produce,
        _commit_offset,
        _transact,
        _crash,
        _crash_losing_unflushed,
        _restart,
        _cut_off,
        _nothing,
    )
    _weights = (60, 10, 10, 5, 5, 10, 5, 5)


FETCH_ROUND_MS = 500
"""Long enough for a quiet follower to fetch and the leader to move its high watermark."""
TXN_ABORT_CHECK_MS = 500
"""How often the transaction coordinator aborts transactions past their timeout."""


async def _settle() -> None:
    """Run the event loop until nothing is ready: every task the last event woke has gone as
    far as it can without the clock moving (asyncio's loop keeps its ready callbacks in
    ``_ready``; with another loop, a few rounds)."""
    loop = asyncio.get_running_loop()
    ready = getattr(loop, "_ready", None)
    await asyncio.sleep(0)
    if ready is None:
        for _ in range(8):
            await asyncio.sleep(0)
    while ready:
        await asyncio.sleep(0)


def run_seed(seed: int, *, steps: int = 400) -> Simulation:
    """One seeded run; raises :class:`InvariantViolated`."""
    memory = Path("/dev/shm")  # fsync is free there: the run costs CPU, not disk waits
    where = str(memory) if memory.is_dir() else None
    with tempfile.TemporaryDirectory(prefix="replica-sim-", dir=where) as root:
        simulation = Simulation(seed, Path(root), steps)
        asyncio.run(simulation.run())
        return simulation
