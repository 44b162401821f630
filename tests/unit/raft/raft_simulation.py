"""A deterministic, seeded simulation of a KRaft quorum (Kafka's ``RaftEventSimulationTest``).

Voters and observers run the real ``RaftClient`` over an in-memory network and in-memory logs,
in virtual time. One ``random.Random(seed)`` decides everything: message delays and drops,
network partitions, kills (some losing what was not flushed), restarts, how slow each flush
is, when the leader appends and when state machines take snapshots. After every step the
invariants are checked:

* one leader per epoch;
* every node's epoch never goes back (restarts included: it is persisted);
* every node's high watermark never goes back within one process lifetime;
* a record delivered as committed is on a majority of voters, flushed (with dynamic voters,
  KIP-853, of some voter set in the log from the record on: a new set counts once appended);
* committed data is identical everywhere: no offset is ever committed with two records;
* at the end, with every node up and the network healed, every node converges on the same
  committed records, and writes go on being committed.

With ``dynamic=True`` the quorum starts from a bootstrap snapshot holding the first voters
(``kraft.version`` 1) beside spare controllers that start as observers, and the leader is asked
now and then to add a spare (once it has caught up) or to remove a voter, itself included; a
removed voter keeps running (as an observer), and may miss its removal while it is down.

A killed node's peers see their connections to it close (unless the network between them is cut
or drops the news), which makes a voter whose leader died run a pre-vote round (KIP-996).

A failure names its seed; ``simulate.py --seed N`` replays it.
"""

from __future__ import annotations

import datetime
import heapq
import itertools
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from kio.schema.add_raft_voter.v0.request import AddRaftVoterRequest, Listener
from kio.schema.errors import ErrorCode
from kio.schema.remove_raft_voter.v0.request import RemoveRaftVoterRequest
from kio.static.primitive import i32, i32Timedelta, u16

from strom.common.clock import ManualClock
from strom.raft import (
    CommittedBatch,
    InboundRequest,
    InboundResponse,
    InMemoryRaftLog,
    LeaderAndEpoch,
    MemoryQuorumStateStore,
    NotLeaderError,
    OffsetAndEpoch,
    OutboundRequest,
    RaftClient,
    RaftConfig,
    Role,
    SnapshotReader,
    SnapshotWriter,
)
from strom.raft.voters import Endpoint, VoterNode, VoterSet

CONTROLLERS = 5
"""In a dynamic run, nodes 1-5 are controllers: the first voters, then spares to add."""

CONFIG = RaftConfig(
    election_timeout_ms=100,
    fetch_timeout_ms=200,
    election_backoff_max_ms=100,
    closed_leader_delay_max_ms=20,
    request_timeout_ms=100,
    retry_backoff_ms=10,
    fetch_max_wait_ms=50,
    fetch_max_bytes=4096,
    snapshot_chunk_bytes=512,
)


class InvariantViolated(AssertionError):
    pass


@dataclass(order=True)
class _Event:
    at: int
    seq: int
    deliver: Any = field(compare=False)


class Network:
    """Messages in flight, each with a delivery time; partitions and drops."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._queue: list[_Event] = []
        self._seq = itertools.count()
        self.drop_rate = 0.0
        self.max_delay = 5
        self.blocked: set[frozenset[int]] = set()

    def can_talk(self, a: int, b: int) -> bool:
        return frozenset((a, b)) not in self.blocked

    def post(self, now: int, source: int, destination: int, deliver: Any) -> None:
        if not self.can_talk(source, destination) or self._rng.random() < self.drop_rate:
            return
        delay = 1 + self._rng.randrange(self.max_delay)
        heapq.heappush(self._queue, _Event(now + delay, next(self._seq), deliver))

    def next_time(self) -> int | None:
        return self._queue[0].at if self._queue else None

    def due(self, now: int) -> Iterator[Any]:
        while self._queue and self._queue[0].at <= now:
            yield heapq.heappop(self._queue).deliver


class StateMachine:
    """What a node's state machine holds: committed (offset, record) pairs, in order."""

    def __init__(self) -> None:
        self.records: dict[int, bytes] = {}
        self.position = 0
        self.leader = LeaderAndEpoch(None, 0)
        self.commits: list[CommittedBatch] = []

    def handle_commit(self, batch: CommittedBatch) -> None:
        for index, record in enumerate(batch.records):
            self.records[batch.base_offset + index] = record
        self.position = batch.last_offset + 1
        self.commits.append(batch)

    def handle_load_snapshot(self, snapshot: SnapshotReader) -> None:
        self.records = {}
        for record in snapshot.records():
            offset, _, value = record.partition(b":")
            self.records[int(offset)] = value
        self.position = snapshot.offset

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        self.leader = leader

    def snapshot_records(self) -> list[bytes]:
        return [b"%d:%s" % (offset, value) for offset, value in sorted(self.records.items())]


class Node:
    def __init__(self, sim: Simulation, node_id: int) -> None:
        self.sim = sim
        self.node_id = node_id
        self.log = InMemoryRaftLog()
        self.store = MemoryQuorumStateStore()
        self.directory_id: uuid.UUID | None = None
        if sim.dynamic:
            self.directory_id = uuid.UUID(int=sim.rng.getrandbits(128))
            if node_id in sim.voters:
                sim.bootstrap_voters = sim.bootstrap_voters.with_voter(self.voter_node())
        self.alive = False
        self.incarnation = 0
        self.flush_at: int | None = None
        self.next_poll = 0
        self.client: RaftClient
        self.machine: StateMachine
        self.start()

    def start(self) -> None:
        self.alive = True
        self.incarnation += 1
        self.machine = StateMachine()
        self.client = RaftClient(
            node_id=self.node_id,
            voters=() if self.sim.dynamic else self.sim.voters,
            directory_id=self.directory_id,
            bootstrap=self.sim.voters if self.sim.dynamic else (),
            cluster_id="sim",
            log=self.log,
            state_store=self.store,
            channel=_Channel(self),
            clock=self.sim.clock,
            random=random.Random(self.sim.rng.getrandbits(32)),
            config=CONFIG,
        )
        self.client.register(self.machine)
        self.next_poll = self.sim.clock.monotonic_ms()
        self.flush_at = None

    def voter_node(self) -> VoterNode:
        return VoterNode(self.node_id, self.directory_id, self.endpoints())

    def endpoints(self) -> tuple[Endpoint, ...]:
        return (Endpoint("CONTROLLER", f"node{self.node_id}", 9093),)

    def format_standalone(self, voters: VoterSet) -> None:
        """The bootstrap snapshot ``strom storage format`` writes: the first voters."""
        writer = SnapshotWriter(
            OffsetAndEpoch(0, 0), timestamp=0, on_frozen=self.log.store_snapshot, voters=voters
        )
        writer.freeze()

    def kill(self, *, lose_unflushed: bool) -> None:
        """The process dies: its log loses what was not flushed (or not), and the nodes it can
        reach see their connections to it close (as a TCP close reaches them)."""
        self.alive = False
        if lose_unflushed:
            self.log.crash()
        else:
            self.log.flush()
        for other in self.sim.nodes.values():
            if other is not self:
                self.sim.network.post(
                    self.sim.clock.monotonic_ms(),
                    self.node_id,
                    other.node_id,
                    self.sim.closing(other, self.node_id),
                )

    def poll(self) -> None:
        now = self.sim.clock.monotonic_ms()
        if self.flush_at is not None and now >= self.flush_at:
            self.log.flush()
            self.flush_at = None
        wait = self.client.poll()
        self.next_poll = now + wait
        if self.log.end_offset > self.log.flushed_end_offset and self.flush_at is None:
            self.flush_at = now + self.sim.rng.randrange(4)
        if self.flush_at is not None:  # a poll before a flush is due must not lose its wake-up
            self.next_poll = min(self.next_poll, self.flush_at)


@dataclass(frozen=True)
class _Ref:
    requester: int
    incarnation: int
    request: OutboundRequest


@dataclass(frozen=True)
class _AdminRef:
    """A voter change an operator asked of the leader (its answer is only counted)."""

    api_key: int


class _Channel:
    def __init__(self, node: Node) -> None:
        self._node = node
        self._incarnation = node.incarnation

    def send(self, request: OutboundRequest) -> None:
        node, sim = self._node, self._node.sim
        source, destination = node.node_id, request.destination
        now = sim.clock.monotonic_ms()

        def deliver() -> None:
            target = sim.nodes[destination]
            if target.alive:
                ref = _Ref(source, self._incarnation, request)
                target.client.handle_request(
                    InboundRequest(ref=ref, source=source, body=request.body)
                )
                target.next_poll = sim.clock.monotonic_ms()
            else:  # nothing listens: the connection is refused
                sim.network.post(sim.clock.monotonic_ms(), destination, source, refused)

        refused = sim.closing(node, destination)

        sim.network.post(now, source, destination, deliver)

    def respond(self, ref: object, body: Any) -> None:
        node, sim = self._node, self._node.sim
        if isinstance(ref, _AdminRef):
            sim.admin_answers.append((ref.api_key, ErrorCode(body.error_code)))
            return
        assert isinstance(ref, _Ref)
        requester, incarnation, request = ref.requester, ref.incarnation, ref.request
        now = sim.clock.monotonic_ms()

        def deliver() -> None:
            target = sim.nodes[requester]
            if target.alive and target.incarnation == incarnation:
                target.client.handle_response(
                    InboundResponse(source=node.node_id, request=request.body, body=body)
                )
                target.next_poll = sim.clock.monotonic_ms()

        sim.network.post(now, node.node_id, requester, deliver)


class Simulation:
    def __init__(
        self, seed: int, *, voters: int = 3, observers: int = 0, dynamic: bool = False
    ) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.clock = ManualClock(now_ms=0)
        self.network = Network(self.rng)
        self.dynamic = dynamic
        self.voters = frozenset(range(1, voters + 1))
        """The static voters; with ``dynamic``, the first voters (and whom others ask)."""
        self.bootstrap_voters = VoterSet(())
        self.admin_answers: list[tuple[int, ErrorCode]] = []
        controllers = range(1, (CONTROLLERS if dynamic else voters) + 1)
        ids = list(controllers) + [100 + i for i in range(observers)]
        self.nodes: dict[int, Node] = {}
        for node_id in ids:
            self.nodes[node_id] = Node(self, node_id)
        if dynamic:
            for node_id in self.voters:
                self.nodes[node_id].format_standalone(self.bootstrap_voters)
                self.nodes[node_id].start()
        self.leaders: dict[int, int] = {}
        self.epochs: dict[int, int] = {}
        self.high_watermarks: dict[tuple[int, int], int] = {}
        self.committed: dict[int, bytes] = {}
        self.checked_commits: dict[int, int] = {}
        self.writes = itertools.count()

    def closing(self, node: Node, peer: int) -> Any:
        """A delivery telling ``node`` (if it still runs) that its connection to ``peer``
        closed."""
        incarnation = node.incarnation

        def deliver() -> None:
            if node.alive and node.incarnation == incarnation:
                node.client.connection_closed(peer)
                node.next_poll = self.clock.monotonic_ms()

        return deliver

    @property
    def majority(self) -> int:
        return len(self.voters) // 2 + 1

    # --- running --------------------------------------------------------------------------------

    def run(self, *, steps: int, faults: bool = True) -> None:
        for _ in range(steps):
            self.step(faults=faults)

    def step(self, *, faults: bool, writes: bool = True) -> None:
        alive = [node for node in self.nodes.values() if node.alive]
        times = [node.next_poll for node in alive]
        network = self.network.next_time()
        if network is not None:
            times.append(network)
        now = self.clock.monotonic_ms()
        target = max(min(times, default=now + 10), now + 1)
        self.clock.advance(target - now)
        for deliver in self.network.due(target):
            deliver()
        for node in alive:
            if node.alive and node.next_poll <= target:
                node.poll()
        if writes:
            self._workload()
        if faults:
            self._faults()
            if self.dynamic:
                self._reconfigure()
        self.check()

    def _workload(self) -> None:
        for node in self.nodes.values():
            if not node.alive:
                continue
            client = node.client
            if client.role is Role.LEADER and self.rng.random() < 0.3:
                client.append([b"w%d" % next(self.writes)], epoch=client.epoch)
                node.next_poll = self.clock.monotonic_ms()
            if self.rng.random() < 0.01 and node.machine.position > 0:
                writer = client.create_snapshot(node.machine.position, _epoch_at(node))
                if writer is not None:
                    writer.append(node.machine.snapshot_records())
                    writer.freeze()

    def _faults(self) -> None:
        rng = self.rng
        roll = rng.random()
        alive = [n for n in self.nodes.values() if n.alive]
        dead = [n for n in self.nodes.values() if not n.alive]
        if roll < 0.002 and alive:
            victim = rng.choice(alive)
            victim.kill(lose_unflushed=rng.random() < 0.5)
        elif roll < 0.006 and dead:
            rng.choice(dead).start()
        elif roll < 0.007:
            ids = sorted(self.nodes)
            cut = set(rng.sample(ids, rng.randrange(1, len(ids)))) if len(ids) > 1 else set()
            self.network.blocked = {frozenset((a, b)) for a in cut for b in ids if b not in cut}
        elif roll < 0.010:
            self.network.blocked = set()
        elif roll < 0.011:
            self.network.drop_rate = rng.choice([0.0, 0.0, 0.05, 0.2])
        elif roll < 0.012:
            self.network.max_delay = rng.choice([1, 5, 20, 60])

    def _reconfigure(self) -> None:
        """Now and then ask the leader to add a spare controller or to remove a voter."""
        rng = self.rng
        if rng.random() >= 0.01:
            return
        leader = self._leader()
        if leader is None:
            return
        client = leader.client
        voters = sorted(client.voters)
        spares = [n for n in self.nodes.values() if n.node_id <= CONTROLLERS]
        spares = [n for n in spares if n.node_id not in client.voters]
        body: Any
        if spares and (len(voters) < 2 or rng.random() < 0.5):
            node = rng.choice(spares)
            body = AddRaftVoterRequest(
                cluster_id="sim",
                timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=500)),
                voter_id=i32(node.node_id),
                voter_directory_id=node.directory_id,
                listeners=tuple(
                    Listener(name=e.name, host=e.host, port=u16(e.port)) for e in node.endpoints()
                ),
            )
        elif len(voters) > 1:
            # The leader removes itself a third of the time.
            victim = leader.node_id if rng.random() < 0.33 else rng.choice(voters)
            body = RemoveRaftVoterRequest(
                cluster_id="sim",
                voter_id=i32(victim),
                voter_directory_id=self.nodes[victim].directory_id,
            )
        else:
            return
        api_key = int(body.__api_key__)
        client.handle_request(InboundRequest(ref=_AdminRef(api_key), source=None, body=body))
        leader.next_poll = self.clock.monotonic_ms()

    def heal(self) -> None:
        self.network.blocked = set()
        self.network.drop_rate = 0.0
        self.network.max_delay = 5
        for node in self.nodes.values():
            if not node.alive:
                node.start()

    # --- invariants -----------------------------------------------------------------------------

    def fail(self, message: str) -> None:
        raise InvariantViolated(
            f"seed {self.seed}: {message} (at t={self.clock.monotonic_ms()} ms; replay with "
            f"tests/unit/raft/simulate.py --seed {self.seed} --voters {len(self.voters)} "
            f"--observers {self._observers}{' --dynamic' if self.dynamic else ''})"
        )

    def check(self) -> None:
        for node in self.nodes.values():
            client = node.client
            epoch = client.epoch
            if epoch < self.epochs.get(node.node_id, 0):
                self.fail(f"node {node.node_id}'s epoch went back to {epoch}")
            self.epochs[node.node_id] = epoch
            if not node.alive:
                continue
            if client.role is Role.LEADER:
                known = self.leaders.setdefault(epoch, node.node_id)
                if known != node.node_id:
                    self.fail(f"two leaders of epoch {epoch}: {known} and {node.node_id}")
            key = (node.node_id, node.incarnation)
            hw = client.high_watermark
            if hw is not None:
                if hw < self.high_watermarks.get(key, -1):
                    self.fail(f"node {node.node_id}'s high watermark went back to {hw}")
                self.high_watermarks[key] = hw
            self._check_commits(node)

    @property
    def _observers(self) -> int:
        return sum(1 for node_id in self.nodes if node_id >= 100)

    def _check_commits(self, node: Node) -> None:
        start = self.checked_commits.get(node.node_id, 0)
        commits = node.machine.commits
        for batch in commits[start:]:
            for index, record in enumerate(batch.records):
                offset = batch.base_offset + index
                known = self.committed.setdefault(offset, record)
                if known != record:
                    self.fail(
                        f"offset {offset} committed as {known!r} and as {record!r} "
                        f"(node {node.node_id})"
                    )
            holders = self._holders(node, batch)
            if holders is not None:
                self.fail(
                    f"node {node.node_id} delivered offsets {batch.base_offset}-"
                    f"{batch.last_offset} as committed, but only {holders} have it flushed"
                )
        self.checked_commits[node.node_id] = len(commits)
        if len(commits) > 1000:  # keep memory flat on long runs
            del commits[:-1]
            self.checked_commits[node.node_id] = 1

    def _holders(self, node: Node, batch: CommittedBatch) -> str | None:
        """None when a majority of some voter set in the node's log from the batch on holds the
        batch (a leader counts a new set as soon as it has its record, KIP-853); else who holds
        it, of which voters."""
        history = node.client.voter_history
        sets = {v.ids for v in history.sets_between(batch.last_offset + 1, node.log.end_offset)}
        shortfall: list[str] = []
        for voters in sets:
            holders = sorted(
                v for v in voters if v in self.nodes and _holds(self.nodes[v].log, batch)
            )
            if len(holders) >= len(voters) // 2 + 1:
                return None
            shortfall.append(f"{holders} of voters {sorted(voters)}")
        return "; ".join(shortfall)

    def converge(self, *, steps: int = 4000) -> None:
        """Heal, then run until every node holds the same committed records, a fresh write
        among them; fail if that never happens."""
        self.heal()
        marker = b"final-%d" % self.seed
        written_in: tuple[int, int] | None = None
        for _ in range(steps):
            self.step(faults=False, writes=False)
            leader = self._leader()
            if leader is None:
                continue
            term = (leader.node_id, leader.client.epoch)
            if marker not in self.committed.values():
                if written_in != term:  # not written yet, or lost with a leader that went
                    try:
                        leader.client.append([marker], epoch=leader.client.epoch)
                        written_in = term
                    except NotLeaderError:
                        pass
                continue
            states = [
                node.machine.records
                for node in self.nodes.values()
                if not self._stranded(node, leader)
            ]
            if all(state == states[0] for state in states):
                return
        summary = {
            n.node_id: (n.client.role.value, n.client.epoch, n.machine.position)
            for n in self.nodes.values()
        }
        self.fail(f"the cluster did not converge: {summary}")

    def _stranded(self, node: Node, leader: Node) -> bool:
        """A removed voter that missed its removal and stands in epochs above the leader's,
        asking only nodes that no longer count it: without pre-vote (KIP-996) it does not find
        the leader again (Kafka's too); the quorum goes on without it."""
        return (
            self.dynamic
            and node.node_id not in leader.client.voters
            and node.client.epoch > leader.client.epoch
        )

    def _leader(self) -> Node | None:
        for node in self.nodes.values():
            if node.alive and node.client.role is Role.LEADER:
                return node
        return None


def _holds(log: InMemoryRaftLog, batch: CommittedBatch) -> bool:
    """The log has the batch, flushed (or it lies below the log's start: in a snapshot)."""
    if batch.last_offset < log.start_offset:
        return True
    if batch.last_offset >= log.flushed_end_offset:
        return False
    for stored in log.batches(batch.base_offset, batch.last_offset + 1):
        return (
            stored.base_offset == batch.base_offset
            and stored.epoch == batch.epoch
            and (batch.is_control or stored.records == batch.records)
        )
    return False


def _epoch_at(node: Node) -> int:
    """The epoch of the record just below the state machine's position."""
    position = node.machine.position
    for batch in node.log.batches(position - 1, position):
        return batch.epoch
    snapshot = node.log.latest_snapshot()
    return snapshot.epoch if snapshot is not None else 0


def run_seed(
    seed: int, *, voters: int, observers: int, steps: int = 3000, dynamic: bool = False
) -> Simulation:
    sim = Simulation(seed, voters=voters, observers=observers, dynamic=dynamic)
    sim.run(steps=steps)
    sim.converge()
    return sim
