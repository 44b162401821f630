"""The replica simulation's controller: a metadata log it commits to and publishes from, broker
sessions and fencing, KIP-966 leader elections, and AlterPartition checked as Kafka's
controller does (partition epoch, leader epoch, KIP-903 broker epochs), answered on time, late
or never; over four partitions on the same replicas: the data partitions ``orders-0`` (every
client write) and ``orders-1`` (transactions span both), and one partition each of
``__consumer_offsets`` and ``__transaction_state`` for the coordinators, each led first by
another broker."""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from kio.schema.alter_partition.v3.request import AlterPartitionRequest
from kio.schema.alter_partition.v3.response import (
    AlterPartitionResponse,
    PartitionData,
    TopicData,
)
from kio.schema.types import BrokerId
from kio.static.primitive import i8, i32, i32Timedelta
from sim_faults import ALTER_TIMEOUT_MS, CONTROLLER, LAG_MS, SESSION_TIMEOUT_MS

from strom.common import ErrorCode, TopicPartition
from strom.controller.topic_names import GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC
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

if TYPE_CHECKING:
    from replica_simulation import Simulation

TP = TopicPartition("orders", 0)
TP2 = TopicPartition("orders", 1)
OFFSETS_TP = TopicPartition(GROUP_METADATA_TOPIC, 0)
TXN_TP = TopicPartition(TRANSACTION_STATE_TOPIC, 0)
DATA = (TP, TP2)
PARTITIONS = (TP, TP2, OFFSETS_TP, TXN_TP)
TOPIC_IDS = {
    TP.topic: uuid.UUID(int=25),
    OFFSETS_TP.topic: uuid.UUID(int=26),
    TXN_TP.topic: uuid.UUID(int=27),
}
BROKERS = (1, 2, 3)


class SimController:
    """The scripted controller (see the module doc)."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.log: list[list[MetadataRecord]] = []
        self.image = MetadataImage.empty()
        self.next_broker_epoch = 100
        self.last_heard: dict[int, int] = {}
        self.elr: dict[TopicPartition, set[int]] = {tp: set() for tp in PARTITIONS}
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
        return self.registration_of(TP)

    def registration_of(self, tp: TopicPartition) -> PartitionRegistration:
        registration = self.image.topics.get_partition(tp)
        assert registration is not None
        return registration

    def active(self) -> dict[int, int]:
        return self.image.cluster.active_broker_epochs()

    def register(self, node_id: int) -> int:
        self.next_broker_epoch += 1
        epoch = self.next_broker_epoch
        self.commit(
            RegisterBrokerRecord(
                broker_id=node_id,
                incarnation_id=uuid.UUID(int=node_id),
                broker_epoch=epoch,
                endpoints=(),
            )
        )  # fenced until it is told to start (as a broker catching up): leadership moves
        self._settle()
        self.last_heard[node_id] = self.sim.clock.monotonic_ms()
        return epoch

    def create_topic(self) -> None:
        """The four partitions on the same replicas, each led first by another of them."""
        replicas = BROKERS[: self.sim.faults.replication_factor]
        records: list[MetadataRecord] = []
        for index, tp in enumerate(PARTITIONS):
            if tp.partition == 0:
                records.append(TopicRecord(name=tp.topic, topic_id=TOPIC_IDS[tp.topic]))
            records.append(
                PartitionRecord(
                    partition_id=tp.partition,
                    topic_id=TOPIC_IDS[tp.topic],
                    replicas=replicas,
                    isr=replicas,
                    leader=replicas[index % len(replicas)],
                    leader_epoch=0,
                    partition_epoch=0,
                )
            )
        self.commit(*records)

    def change(
        self,
        tp: TopicPartition,
        *,
        isr: tuple[int, ...] | None = None,
        leader: int = NO_LEADER_CHANGE,
    ) -> None:
        if isr is not None:
            elr = self.elr[tp]
            left = set(self.registration_of(tp).isr) - set(isr)
            if len(isr) < self.sim.faults.min_isr:
                elr |= left
            else:
                elr.clear()
            elr -= set(isr)
        self.commit(
            PartitionChangeRecord(
                partition_id=tp.partition, topic_id=TOPIC_IDS[tp.topic], isr=isr, leader=leader
            )
        )
        if tp == TP:
            self.sim.invariants.changed = True

    def fence(self, broker_id: int, *, unclean: bool = False) -> None:
        """The broker's session ended: fence it, take it out of the ISR (unless it is the
        last member) and elect another leader from the ISR if it led. ``unclean``: it lost
        data, so it is no eligible leader replica any more."""
        epoch = self.active().get(broker_id)
        if epoch is not None:
            self.commit(FenceBrokerRecord(id=broker_id, epoch=epoch))
            self._settle()
        if unclean:
            for elr in self.elr.values():
                elr.discard(broker_id)

    def unfence(self, broker_id: int) -> None:
        registered = self.image.cluster.brokers.get(broker_id)
        if registered is not None and registered.fenced:
            self.commit(UnfenceBrokerRecord(id=broker_id, epoch=registered.epoch))
        self._settle()

    def _settle(self) -> None:
        """Fenced brokers leave each ISR (not its last member); a leaderless or fenced-led
        partition gets a leader from the ISR's active members, else from the ELR's."""
        if self.image.topics.get_partition(TP) is None:
            return
        for tp in PARTITIONS:
            registration, active = self.registration_of(tp), self.active()
            isr = tuple(b for b in registration.isr if b in active) or registration.isr
            leader = registration.leader
            if leader not in active:
                candidates = [b for b in isr if b in active]
                eligible = sorted(b for b in self.elr[tp] if b in active)
                if not candidates and eligible:
                    candidates, isr = eligible[:1], tuple(eligible[:1])
                leader = self.sim.rng.choice(candidates) if candidates else NO_LEADER
            if isr != registration.isr or leader != registration.leader:
                self.change(
                    tp,
                    isr=isr,
                    leader=NO_LEADER_CHANGE if leader == registration.leader else leader,
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
        self,
        node_id: int,
        request: AlterPartitionRequest,
        reply: Callable[[AlterPartitionResponse], object],
    ) -> None:
        """Kafka's AlterPartition checks, then the commit and its answer (lost, late or on
        time) through ``reply``."""
        [topic] = request.topics
        [asked] = topic.partitions
        topic_id = topic.topic_id
        name = next(name for name, known in TOPIC_IDS.items() if known == topic_id)
        tp = TopicPartition(name, int(asked.partition_index))
        new_isr = tuple(int(member.broker_id) for member in asked.new_isr_with_epochs)
        registration, active = self.registration_of(tp), self.active()
        added = set(new_isr) - set(registration.isr)
        if active.get(node_id) != int(request.broker_epoch):
            error = ErrorCode.stale_broker_epoch
        elif int(asked.leader_epoch) < registration.leader_epoch:
            error = ErrorCode.fenced_leader_epoch
        elif registration.leader != node_id or int(asked.leader_epoch) > registration.leader_epoch:
            error = ErrorCode.not_leader_or_follower
        elif int(asked.partition_epoch) != registration.partition_epoch:
            error = ErrorCode.invalid_update_version
        elif not all(
            int(m.broker_id) == node_id
            or (int(m.broker_id) in active and int(m.broker_epoch) in (-1, active[m.broker_id]))
            for m in asked.new_isr_with_epochs
        ):  # KIP-903: each new member active, in the broker epoch it fetched in
            error = ErrorCode.ineligible_replica
        else:
            error = ErrorCode.none
            self.change(tp, isr=new_isr)
        registration = self.registration_of(tp)
        answer = AlterPartitionResponse(
            throttle_time=i32Timedelta.parse(datetime.timedelta(0)),
            error_code=ErrorCode.none,
            topics=(
                TopicData(
                    topic_id=topic_id,
                    partitions=(
                        PartitionData(
                            partition_index=i32(tp.partition),
                            error_code=error,
                            leader_id=BrokerId(registration.leader),
                            leader_epoch=i32(registration.leader_epoch),
                            isr=tuple(BrokerId(b) for b in registration.isr),
                            leader_recovery_state=i8(0),
                            partition_epoch=i32(registration.partition_epoch),
                        ),
                    ),
                ),
            ),
        )
        faults, rng = self.sim.faults, self.sim.rng
        if error == ErrorCode.none and added and rng.random() < faults.cut_after_expansion:
            # the answer is lost with it; long enough to be fenced and replaced
            self.sim.cut(node_id, at_least_ms=LAG_MS + SESSION_TIMEOUT_MS)
            return
        if rng.random() < faults.lose_answer:
            return
        extra = ALTER_TIMEOUT_MS if rng.random() < faults.late_answer else 0
        self.sim.network.send(CONTROLLER, node_id, lambda: reply(answer), extra_ms=extra)
