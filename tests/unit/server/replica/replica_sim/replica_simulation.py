"""A seeded, virtual-time simulation of three brokers and a scripted controller over the real
replica code: each broker's ``ReplicaManager`` (its ``Partition``, the produce purgatory that
parks acks=all writes, the follower fetch path ``read_for_follower`` / ``append_as_follower`` /
``truncate_follower``) over a real ``LogManager`` on disk, driven by one ``ManualTimer``.

The controller commits metadata records (broker registrations, fencing, ISR and leader
changes) and publishes them to each broker, which replays what it has not seen as one delta
(coalesced, as a broker's metadata loader does) into ``ReplicaManager.apply_metadata``. It
checks each AlterPartition as Kafka's controller does (partition epoch, leader epoch, KIP-903
broker epochs) and elects leaders from the ISR only. The leader's AlterPartition "manager"
keeps one request in flight per partition, re-sends it on a timeout and when
``isr_change_done`` asks, and ignores answers to requests it gave up on.

Faults, by seed: messages between brokers and the controller dropped, delayed (and so
reordered) and duplicated; AlterPartition answers lost or late; brokers that crash (keeping
their log, or losing an unflushed tail), that restart in a new broker epoch, and that are cut
off from the cluster while clients still write to them.

Invariants, checked after every step:
- no acknowledged acks=all write is lost: the controller's leader holds each at its offset;
- replicas agree below their high watermarks;
- at most one leader acknowledges writes in each leader epoch;
- a leader's high watermark never goes backwards within its leadership;
- an acks=all produce parked at a broker is answered once the broker stops leading.
A failure raises :class:`InvariantViolated` naming its seed; ``simulate_replicas.py --seed N``
replays it.
"""

from __future__ import annotations

import asyncio
import random
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from strom.common import ErrorCode, KafkaError, TopicPartition
from strom.common.clock import ManualClock
from strom.common.timer import ManualTimer
from strom.config import ServerConfig
from strom.metadata import NO_LEADER, NO_LEADER_CHANGE, MetadataDelta, MetadataImage
from strom.metadata.image import PartitionRegistration
from strom.metadata.records import (
    FenceBrokerRecord,
    MetadataRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
    UnfenceBrokerRecord,
)
from strom.protocol.batch import scan_batches
from strom.protocol.records import Record, build_batch
from strom.replication.partition_replication import IsrChange
from strom.server.replica.replica_manager import ReplicaManager
from strom.server.replica.replica_results import FollowTarget
from strom.storage.leader_epoch_cache import EpochEndOffset
from strom.storage.log_manager import LogManager
from strom.storage.partition_log import PartitionLog

TP = TopicPartition("orders", 0)
TOPIC_ID = uuid.UUID(int=25)
BROKERS = (1, 2, 3)
LAG_MS = 1_000
FETCH_BACKOFF_MS = 50
FETCH_TIMEOUT_MS = 300
ISR_CHECK_MS = 250
CHECKPOINT_MS = 2_000
ALTER_TIMEOUT_MS = 400
ALTER_RETRY_MS = 50
METADATA_PUBLISH_MS = 100
SESSION_TIMEOUT_MS = 1_500
PRODUCE_TIMEOUT_MS = 3_000
CONTROLLER = 0

Batch = tuple[int, int, int]
"""(base offset, last offset, CRC) of one batch in a log: the CRC covers its records, not its
offsets or leader epoch."""


class InvariantViolated(AssertionError):
    """A replication invariant broke; the message names the seed that replays it."""


@dataclass(frozen=True)
class Faults:
    drop: float
    duplicate: float
    max_delay_ms: int
    lose_answer: float
    late_answer: float
    metadata_lag_ms: int
    """Extra delay of the metadata reaching brokers (behind the AlterPartition answers)."""
    cut_after_expansion: float
    """How often the leader is cut off just after the controller commits its ISR expansion."""
    min_isr: int
    replication_factor: int
    """The partition's replicas are the first brokers (the others host nothing)."""
    replica_epochs: bool
    """Followers say their broker epoch in fetches (Fetch v15+, KIP-903), or not."""

    @classmethod
    def of(cls, rng: random.Random) -> Faults:
        return cls(
            drop=rng.choice((0.0, 0.02, 0.1)),
            duplicate=rng.choice((0.0, 0.05)),
            max_delay_ms=rng.choice((2, 20, 80)),
            lose_answer=rng.choice((0.0, 0.2, 0.5)),
            late_answer=rng.choice((0.0, 0.2)),
            metadata_lag_ms=rng.choice((0, 300, 1_500)),
            cut_after_expansion=rng.choice((0.0, 0.3, 1.0)),
            min_isr=rng.choice((1, 2)),
            replication_factor=rng.choice((2, 3)),
            replica_epochs=rng.random() < 0.5,
        )


class Network:
    """Messages between nodes (brokers by id, the controller as 0) over virtual time."""

    def __init__(self, rng: random.Random, timer: ManualTimer, faults: Faults) -> None:
        self.rng = rng
        self.timer = timer
        self.faults = faults
        self.cut_off: set[int] = set()

    def reachable(self, source: int, target: int) -> bool:
        return source not in self.cut_off and target not in self.cut_off

    def send(
        self, source: int, target: int, deliver: Callable[[], object], *, extra_ms: int = 0
    ) -> None:
        """Deliver later, maybe twice, maybe never; ``deliver`` checks its receiver still
        lives (a message to an earlier life of a broker is lost with it)."""
        if not self.reachable(source, target) or self.rng.random() < self.faults.drop:
            return
        copies = 2 if self.rng.random() < self.faults.duplicate else 1
        for _ in range(copies):
            delay = self.rng.randint(1, self.faults.max_delay_ms) + extra_ms
            self.timer.call_later(delay, lambda: self._arrive(source, target, deliver))

    def _arrive(self, source: int, target: int, deliver: Callable[[], object]) -> None:
        if self.reachable(source, target):
            deliver()


@dataclass
class Ack:
    broker: int
    leader_epoch: int
    batch: Batch


def batches(log: PartitionLog, end: int | None = None) -> dict[int, Batch]:
    """The log's batches by base offset (below ``end``)."""
    data = log.read_bytes(log.log_start_offset, max_bytes=1 << 26)
    found, _ = scan_batches(data)
    result = {}
    for _, header in found:
        if end is not None and header.last_offset >= end:
            break
        result[header.base_offset] = (header.base_offset, header.last_offset, header.crc)
    return result


class SimBroker:
    """One broker: a replica manager over its data dir, its fetcher, its AlterPartition
    sender and its periodic tasks, all on the simulation's timer."""

    def __init__(self, sim: Simulation, node_id: int) -> None:
        self.sim = sim
        self.node_id = node_id
        self.data_dir = sim.root / f"broker-{node_id}"
        self.alive = False
        self.life = 0
        """One more at each start and crash: timers and messages of an earlier life are void."""
        self.broker_epoch = -1
        self.applied = 0
        self.follow: FollowTarget | None = None
        self.fetch_id = 0
        self.fetching = False
        self.alter_id = 0
        self.alter_in_flight: tuple[int, int, IsrChange] | None = None
        self.log_manager: LogManager | None = None
        self.metadata = _Metadata()
        self.replica_manager: ReplicaManager | None = None
        self.lose = 0
        """Batches its log loses at the next start (a power cut took its unflushed tail)."""

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self, broker_epoch: int, lose: int = 0) -> None:
        self.life += 1
        self.alive = True
        self.broker_epoch = broker_epoch
        self.log_manager = LogManager(self.data_dir, self.sim.clock)
        log = self.log_manager.get_or_create(TP)
        if lose:
            batches_left = sorted(batches(log))
            cut = batches_left[-lose] if len(batches_left) >= lose else 0
            log.truncate_to(cut)
        self.metadata = _Metadata()
        self.applied = 0
        self.follow, self.fetching, self.alter_in_flight = None, False, None
        self.replica_manager = ReplicaManager(
            node_id=self.node_id,
            log_manager=self.log_manager,
            metadata=self.metadata,
            config=self.sim.config,
            clock=self.sim.clock,
            timer=self.sim.timer,
        )
        self.replica_manager.isr_change_sender = self._send_alter
        self._every(FETCH_BACKOFF_MS, self._fetch)
        self._every(ISR_CHECK_MS, self.manager.check_isr)
        self._every(CHECKPOINT_MS, self.manager.checkpoint_high_watermarks)

    def crash(self) -> None:
        self.alive = False
        self.life += 1
        assert self.log_manager is not None
        self.log_manager.close_without_flush()
        self.log_manager = self.replica_manager = None

    def _every(self, period_ms: int, task: Callable[[], object]) -> None:
        life = self.life

        def tick() -> None:
            if self.life == life:
                task()
                self.sim.timer.call_later(period_ms, tick)

        self.sim.timer.call_later(self.sim.rng.randint(1, period_ms), tick)

    @property
    def manager(self) -> ReplicaManager:
        assert self.replica_manager is not None
        return self.replica_manager

    @property
    def log(self) -> PartitionLog:
        assert self.log_manager is not None
        log = self.log_manager.get(TP)
        assert log is not None
        return log

    def leads(self) -> int | None:
        """The leader epoch this broker leads the partition in, if it does."""
        partition = self.manager._partitions.get(TP)
        if partition is None or partition.replication is None:
            return None
        return partition.replication.leader_epoch

    # --- metadata ----------------------------------------------------------------------------

    def metadata_sender(self, end: int) -> Callable[[], None]:
        """What delivers the controller's log up to ``end`` to this life of the broker."""
        life = self.life
        return lambda: self.on_metadata(life, end)

    def on_metadata(self, life: int, end: int) -> None:
        """The controller's log up to ``end``: replay what is new here as one delta."""
        if life != self.life or end <= self.applied:
            return
        delta = MetadataDelta(self.metadata.image)
        for records in self.sim.controller.log[self.applied : end]:
            for record in records:
                delta.replay(record)
        self.applied = end
        image = delta.apply()
        self.metadata.image = image
        changes = self.manager.apply_metadata(delta, image)
        if TP in changes.follow:
            self.follow = changes.follow[TP]
            self.fetching = False
        elif TP in changes.stop:
            self.follow = None

    # --- the fetcher -------------------------------------------------------------------------

    def _fetch(self) -> None:
        target = self.follow
        if target is None or self.fetching:
            return
        self.fetch_id += 1
        fetch_id, life = self.fetch_id, self.life
        self.fetching = True
        log = self.log
        request = (log.log_end_offset, log.leader_epochs.latest_epoch)
        leader = self.sim.brokers[target.leader_id]

        def timed_out() -> None:
            if self.life == life and self.fetch_id == fetch_id:
                self.fetching = False

        self.sim.timer.call_later(FETCH_TIMEOUT_MS, timed_out)
        self.sim.network.send(
            self.node_id,
            target.leader_id,
            lambda: leader.serve_fetch(self, life, fetch_id, target, request),
        )

    def serve_fetch(
        self,
        follower: SimBroker,
        follower_life: int,
        fetch_id: int,
        target: FollowTarget,
        request: tuple[int, int],
    ) -> None:
        if not self.alive:
            return
        fetch_offset, last_epoch = request
        read = self.manager.read_for_follower(
            TP,
            replica_id=follower.node_id,
            replica_epoch=follower.broker_epoch if self.sim.faults.replica_epochs else -1,
            fetch_offset=fetch_offset,
            max_bytes=1 << 20,
            current_leader_epoch=target.leader_epoch,
            last_fetched_epoch=last_epoch,
        )
        try:
            answer = (
                read.error,
                read.diverging_epoch,
                b"".join(region.read() for region in read.regions),
                read.high_watermark,
                read.log_start_offset,
            )
        finally:
            read.close()
        self.sim.network.send(
            self.node_id,
            follower.node_id,
            lambda: follower.on_fetched(follower_life, fetch_id, target, fetch_offset, answer),
        )

    def on_fetched(
        self,
        life: int,
        fetch_id: int,
        target: FollowTarget,
        fetch_offset: int,
        answer: tuple[ErrorCode, tuple[int, int] | None, bytes, int, int],
    ) -> None:
        if life != self.life or fetch_id != self.fetch_id or target != self.follow:
            return  # an answer to an earlier request: the fetcher dropped it
        self.fetching = False
        error, diverging, data, high_watermark, log_start = answer
        if error != ErrorCode.none or fetch_offset != self.log.log_end_offset:
            return
        try:
            if diverging is not None:
                self.manager.truncate_follower(
                    TP, leader_epoch=target.leader_epoch, diverging=EpochEndOffset(*diverging)
                )
            else:
                self.manager.append_as_follower(
                    TP,
                    data,
                    leader_epoch=target.leader_epoch,
                    high_watermark=high_watermark,
                    log_start_offset=log_start,
                )
        except KafkaError:
            return  # the epoch moved on meanwhile

    # --- AlterPartition ----------------------------------------------------------------------

    def _send_alter(self, tp: TopicPartition, leader_epoch: int, change: IsrChange) -> None:
        self.alter_id += 1
        alter_id, life = self.alter_id, self.life
        self.alter_in_flight = (alter_id, leader_epoch, change)
        controller = self.sim.controller
        self.sim.network.send(
            self.node_id,
            CONTROLLER,
            lambda: controller.alter_partition(self, life, alter_id, leader_epoch, change),
        )
        self.sim.timer.call_later(ALTER_TIMEOUT_MS, lambda: self.on_altered(life, alter_id, None))

    def on_altered(
        self, life: int, alter_id: int, answer: tuple[ErrorCode, tuple[int, ...], int] | None
    ) -> None:
        """The controller's answer (None: the request timed out)."""
        in_flight = self.alter_in_flight
        if life != self.life or in_flight is None or in_flight[0] != alter_id:
            return
        self.alter_in_flight = None
        _, leader_epoch, change = in_flight
        if answer is not None and answer[0] == ErrorCode.none:
            _, isr, partition_epoch = answer
            self.manager.isr_change_done(
                TP,
                leader_epoch=leader_epoch,
                change=change,
                isr=isr,
                partition_epoch=partition_epoch,
            )
            return
        error = None if answer is None else answer[0]
        if self.manager.isr_change_done(
            TP, leader_epoch=leader_epoch, change=change, isr=None, error=error
        ):
            self.sim.timer.call_later(
                ALTER_RETRY_MS, lambda: self._resend(life, leader_epoch, change)
            )

    def _resend(self, life: int, leader_epoch: int, change: IsrChange) -> None:
        if life == self.life and self.alter_in_flight is None and self.leads() == leader_epoch:
            self._send_alter(TP, leader_epoch, change)


class _Metadata:
    def __init__(self) -> None:
        self.image = MetadataImage.empty()


class SimController:
    """The scripted controller: a metadata log it commits to and publishes from."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.log: list[list[MetadataRecord]] = []
        self.image = MetadataImage.empty()
        self.next_broker_epoch = 100
        self.last_heard: dict[int, int] = {}
        self.elr: set[int] = set()
        """KIP-966's eligible leader replicas: members that left an ISR smaller than min ISR
        (they hold every committed record), electable when no ISR member is."""

    def commit(self, *records: MetadataRecord) -> None:
        delta = MetadataDelta(self.image)
        for record in records:
            delta.replay(record)
        self.image = delta.apply()
        self.log.append(list(records))
        self.publish()

    def publish(self) -> None:
        end = len(self.log)
        for broker in self.sim.brokers.values():
            if broker.alive:
                self.sim.network.send(
                    CONTROLLER,
                    broker.node_id,
                    broker.metadata_sender(end),
                    extra_ms=self.sim.faults.metadata_lag_ms,
                )

    @property
    def registration(self) -> PartitionRegistration:
        registration = self.image.topics.get_partition(TP)
        assert registration is not None
        return registration

    def active(self) -> dict[int, int]:
        return self.image.cluster.active_broker_epochs()

    def register(self, broker: SimBroker) -> int:
        self.next_broker_epoch += 1
        epoch = self.next_broker_epoch
        self.commit(
            RegisterBrokerRecord(
                broker_id=broker.node_id,
                incarnation_id=uuid.UUID(int=broker.node_id),
                broker_epoch=epoch,
                endpoints=(),
            )
        )  # fenced until it is told to start (as a broker catching up): leadership moves
        self._settle()
        self.last_heard[broker.node_id] = self.sim.clock.monotonic_ms()
        return epoch

    def create_topic(self) -> None:
        self.commit(
            TopicRecord(name=TP.topic, topic_id=TOPIC_ID),
            PartitionRecord(
                partition_id=TP.partition,
                topic_id=TOPIC_ID,
                replicas=BROKERS[: self.sim.faults.replication_factor],
                isr=BROKERS[: self.sim.faults.replication_factor],
                leader=BROKERS[0],
                leader_epoch=0,
                partition_epoch=0,
            ),
        )

    def change(self, *, isr: tuple[int, ...] | None = None, leader: int = NO_LEADER_CHANGE) -> None:
        if isr is not None:
            left = set(self.registration.isr) - set(isr)
            if len(isr) < self.sim.faults.min_isr:
                self.elr |= left
            else:
                self.elr.clear()
            self.elr -= set(isr)
        self.commit(
            PartitionChangeRecord(
                partition_id=TP.partition, topic_id=TOPIC_ID, isr=isr, leader=leader
            )
        )

    def fence(self, broker_id: int, *, unclean: bool = False) -> None:
        """The broker's session ended: fence it, take it out of the ISR (unless it is the
        last member) and elect another leader from the ISR if it led. ``unclean``: it lost
        data, so it is no eligible leader replica any more."""
        epoch = self.active().get(broker_id)
        if epoch is not None:
            self.commit(FenceBrokerRecord(id=broker_id, epoch=epoch))
            self._settle()
        if unclean:
            self.elr.discard(broker_id)

    def unfence(self, broker_id: int) -> None:
        registered = self.image.cluster.brokers.get(broker_id)
        if registered is not None and registered.fenced:
            self.commit(UnfenceBrokerRecord(id=broker_id, epoch=registered.epoch))
        self._settle()

    def _settle(self) -> None:
        """Fenced brokers leave the ISR (not its last member); a leaderless or fenced-led
        partition gets a leader from the ISR's active members, else from the ELR's."""
        if self.image.topics.get_partition(TP) is None:
            return
        registration, active = self.registration, self.active()
        isr = tuple(b for b in registration.isr if b in active) or registration.isr
        leader = registration.leader
        if leader not in active:
            candidates = [b for b in isr if b in active]
            eligible = sorted(b for b in self.elr if b in active)
            if not candidates and eligible:
                candidates, isr = eligible[:1], tuple(eligible[:1])
            leader = self.sim.rng.choice(candidates) if candidates else NO_LEADER
        if isr != registration.isr or leader != registration.leader:
            self.change(
                isr=isr, leader=NO_LEADER_CHANGE if leader == registration.leader else leader
            )

    def heartbeats(self) -> None:
        now = self.sim.clock.monotonic_ms()
        for broker in self.sim.brokers.values():
            if broker.alive and self.sim.network.reachable(broker.node_id, CONTROLLER):
                self.last_heard[broker.node_id] = now
        for broker_id, heard in self.last_heard.items():
            if now - heard > SESSION_TIMEOUT_MS:
                self.fence(broker_id)

    def alter_partition(
        self, broker: SimBroker, life: int, alter_id: int, leader_epoch: int, change: IsrChange
    ) -> None:
        """Kafka's AlterPartition checks, then the commit and its answer (lost, late or on
        time)."""
        registration, active = self.registration, self.active()
        if active.get(broker.node_id) != broker.broker_epoch:
            error = ErrorCode.stale_broker_epoch
        elif leader_epoch < registration.leader_epoch:
            error = ErrorCode.fenced_leader_epoch
        elif registration.leader != broker.node_id or leader_epoch > registration.leader_epoch:
            error = ErrorCode.not_leader_or_follower
        elif change.partition_epoch != registration.partition_epoch:
            error = ErrorCode.invalid_update_version
        elif not all(
            b == broker.node_id or (b in active and epoch in (-1, active[b]))
            for b, epoch in zip(change.isr, change.broker_epochs, strict=True)
        ):  # KIP-903: each new member active, in the broker epoch it fetched in
            error = ErrorCode.ineligible_replica
        else:
            error = ErrorCode.none
            self.change(isr=change.isr)
        answer = (error, self.registration.isr, self.registration.partition_epoch)
        faults, rng = self.sim.faults, self.sim.rng
        if error == ErrorCode.none and change.added and rng.random() < faults.cut_after_expansion:
            # the answer is lost with it; long enough to be fenced and replaced
            self.sim.cut(broker.node_id, at_least_ms=LAG_MS + SESSION_TIMEOUT_MS)
            return
        if rng.random() < faults.lose_answer:
            return
        extra = ALTER_TIMEOUT_MS if rng.random() < faults.late_answer else 0
        self.sim.network.send(
            CONTROLLER,
            broker.node_id,
            lambda: broker.on_altered(life, alter_id, answer),
            extra_ms=extra,
        )


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
            }
        )
        self.controller = SimController(self)
        self.brokers = {b: SimBroker(self, b) for b in BROKERS}
        self.acked: dict[int, Ack] = {}
        self.committed: dict[int, Batch] = {}
        """Batches a leader held below its high watermark, by base offset."""
        self.acking: dict[int, int] = {}
        """Leader epoch -> the broker that acknowledged a write in it."""
        self.high_watermarks: dict[tuple[int, int, int], int] = {}
        """(broker, life, leader epoch) -> the highest high watermark it had as leader."""
        self.values = 0
        self.step = 0

    def violated(self, what: str) -> None:
        raise InvariantViolated(
            f"seed {self.seed}, step {self.step}, {self.clock.monotonic_ms()} ms: {what} "
            f"(faults {self.faults})"
        )

    # --- the run -----------------------------------------------------------------------------

    async def run(self) -> None:
        for broker in self.brokers.values():
            broker.start(self.controller.register(broker))
            self.controller.unfence(broker.node_id)
        self.controller.create_topic()
        self._every(METADATA_PUBLISH_MS, self._controller_tick)
        try:
            for step in range(self.steps):
                self.step = step
                self.rng.choices(self._actions, self._weights)[0](self)
                await self._advance(self.rng.randint(1, 60))
                if self.step % 5 == 0:
                    self._check_logs()
            self._heal()
            await self._advance(4 * SESSION_TIMEOUT_MS)
            self._check_logs()
        finally:
            for broker in self.brokers.values():
                if broker.alive:
                    broker.crash()

    async def _advance(self, ms: int) -> None:
        """Run the timers ``ms`` ahead, one due callback at a time, checking the invariants
        (and letting the event loop run the purgatories' done-callbacks) after each."""
        until = self.clock.monotonic_ms() + ms
        while (due := self.timer.next_due_ms()) is not None and due <= until:
            self.timer.advance_to(due)
            await asyncio.sleep(0)
            self._check()
        self.timer.advance_to(until)

    def _every(self, period_ms: int, task: Callable[[], object]) -> None:
        def tick() -> None:
            task()
            self.timer.call_later(period_ms, tick)

        self.timer.call_later(period_ms, tick)

    def _controller_tick(self) -> None:
        self.controller.heartbeats()
        self.controller.publish()

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
        if not broker.alive:
            return
        self.values += 1
        value = f"v{self.values}-".encode()
        count = self.rng.randint(1, 3)
        records = [Record(i, 1_000, None, value + str(i).encode()) for i in range(count)]
        data = build_batch(records)
        acks = -1 if self.rng.random() < 0.8 else 1
        [(_, result)] = broker.manager.append_to_local_log([(TP, data)], required_acks=acks)
        if result.error != ErrorCode.none or acks == 1:
            return
        [(_, header)], _ = scan_batches(data)
        batch = (result.base_offset, result.last_offset, header.crc)
        life = broker.life

        def answered(outcomes: dict[TopicPartition, ErrorCode]) -> None:
            if outcomes[TP] == ErrorCode.none and broker.life == life:
                self._acknowledged(broker, batch)

        broker.manager.when_acknowledged(
            {TP: result.last_offset + 1}, timeout_ms=PRODUCE_TIMEOUT_MS, callback=answered
        )

    def _acknowledged(self, broker: SimBroker, batch: Batch) -> None:
        epoch = broker.leads()
        if epoch is None:
            self.violated(f"broker {broker.node_id} acknowledged {batch} without leading")
            return
        other = self.acking.setdefault(epoch, broker.node_id)
        if other != broker.node_id:
            self.violated(
                f"brokers {other} and {broker.node_id} both acknowledged in epoch {epoch}"
            )
        earlier = self.acked.get(batch[0])
        if earlier is not None and earlier.batch != batch:
            self.violated(f"{batch} acknowledged at the offset of acknowledged {earlier}")
        self.acked[batch[0]] = Ack(broker.node_id, epoch, batch)

    def _crash(self, *, lose: bool = False) -> None:
        alive = [
            b for b in self.brokers.values() if b.alive and b.node_id not in self.network.cut_off
        ]
        if len(alive) < 2:
            return
        broker = self.rng.choice(alive)
        registration = self.controller.registration
        if lose and registration.isr == (broker.node_id,):
            return  # unflushed data lost by a replica the controller may elect: Kafka's limit too
        broker.crash()
        if lose:
            broker.lose = self.rng.randint(1, 5)
            self.controller.fence(broker.node_id, unclean=True)  # it must rejoin from scratch

    def _crash_losing_unflushed(self) -> None:
        """Only where fetches carry the broker epoch: without it (before KIP-903) a leader
        that has not yet seen the restart may take the follower back on its stale state, a
        known hole of those versions, not one of the code under test."""
        self._crash(lose=self.faults.replica_epochs)

    def _restart(self) -> None:
        dead = [b for b in self.brokers.values() if not b.alive]
        if dead:
            broker = self.rng.choice(dead)
            broker.start(self.controller.register(broker), lose=broker.lose)
            broker.lose = 0
            self.controller.unfence(broker.node_id)

    def _cut_off(self) -> None:
        self.cut(self.rng.choice(BROKERS))

    def cut(self, broker_id: int, *, at_least_ms: int = 200) -> None:
        """The broker loses the network (clients still reach it) for up to a few session
        timeouts."""
        if not self.network.cut_off:
            self.network.cut_off.add(broker_id)
            lasts = self.rng.randint(at_least_ms, 3 * SESSION_TIMEOUT_MS)
            self.timer.call_later(lasts, self._heal_cut)

    def _heal_cut(self) -> None:
        for broker_id in list(self.network.cut_off):
            self.network.cut_off.discard(broker_id)
            if self.brokers[broker_id].alive:
                self.controller.last_heard[broker_id] = self.clock.monotonic_ms()
                self.controller.unfence(broker_id)

    def _heal(self) -> None:
        self._heal_cut()
        while any(not b.alive for b in self.brokers.values()):
            self._restart()

    def _nothing(self) -> None:
        pass

    _actions = (_produce, _crash, _crash_losing_unflushed, _restart, _cut_off, _nothing)
    _weights = (60, 5, 5, 10, 5, 5)

    # --- invariants --------------------------------------------------------------------------

    def _check(self) -> None:
        for broker in self.brokers.values():
            if not broker.alive:
                continue
            epoch = broker.leads()
            if epoch is None:
                if broker.manager.produce_purgatory.watched(TP):
                    self.violated(
                        f"broker {broker.node_id} stopped leading {TP} but an acks=all produce "
                        "still waits in its purgatory"
                    )
                continue
            key = (broker.node_id, broker.life, epoch)
            high_watermark = broker.log.high_watermark
            if high_watermark < self.high_watermarks.get(key, 0):
                self.violated(
                    f"leader {broker.node_id}'s high watermark went back from "
                    f"{self.high_watermarks[key]} to {high_watermark} in epoch {epoch}"
                )
            self.high_watermarks[key] = high_watermark

    def _check_logs(self) -> None:
        leader = self.brokers.get(self.controller.registration.leader)
        logs = {
            b.node_id: (batches(b.log), min(b.log.high_watermark, b.log.log_end_offset))
            for b in self.brokers.values()
            if b.alive
        }
        for broker_id, (found, high_watermark) in logs.items():
            if self.brokers[broker_id].leads() is None:
                continue
            for base, batch in found.items():
                if batch[1] >= high_watermark:
                    break
                if self.committed.setdefault(base, batch) != batch:
                    self.violated(
                        f"leader {broker_id} has {batch} below its high watermark "
                        f"{high_watermark}, where {self.committed[base]} was committed"
                    )
        if leader is not None and leader.alive:
            held, _ = logs[leader.node_id]
            for base, batch in self.committed.items():
                if held.get(base) != batch:
                    self.violated(
                        f"committed {batch} is not in leader {leader.node_id}'s log: "
                        f"{held.get(base)}"
                    )
            for base, ack in self.acked.items():
                if held.get(base) != ack.batch:
                    self.violated(
                        f"acknowledged {ack.batch} (by {ack.broker} in epoch {ack.leader_epoch}) "
                        f"is not in leader {leader.node_id}'s log: {held.get(base)}"
                    )
        for a, (a_batches, a_hw) in logs.items():
            for b, (b_batches, b_hw) in logs.items():
                if a >= b:
                    continue
                below = min(a_hw, b_hw)
                mine = [x for x in a_batches.values() if x[1] < below]
                theirs = [x for x in b_batches.values() if x[1] < below]
                if mine != theirs:
                    self.violated(f"brokers {a} and {b} disagree below offset {below}")


def run_seed(seed: int, *, steps: int = 400) -> Simulation:
    """One seeded run; raises :class:`InvariantViolated`."""
    memory = Path("/dev/shm")  # fsync is free there: the run costs CPU, not disk waits
    where = str(memory) if memory.is_dir() else None
    with tempfile.TemporaryDirectory(prefix="replica-sim-", dir=where) as root:
        simulation = Simulation(seed, Path(root), steps)
        asyncio.run(simulation.run())
        return simulation
