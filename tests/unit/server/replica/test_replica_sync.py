"""Two replica managers, a leader and a follower, wired by hand: the follower's fetch path
(``read_for_follower`` on the leader, ``append_as_follower`` / ``truncate_follower`` on the
follower) as the fetcher drives it, through KIP-101's divergence after a leader change, ISR
shrink and expansion, leadership changes from metadata, and the high watermark checkpoint."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from data_path_harness import MutableMetadata, batch, image_of

from strom.common import ErrorCode, KafkaError, TopicPartition
from strom.common.clock import ManualClock
from strom.common.timer import ManualTimer
from strom.config import ServerConfig
from strom.metadata import MetadataDelta, MetadataImage, RegisterBrokerRecord
from strom.metadata.image import ClusterImage, PartitionRegistration
from strom.protocol.batch import scan_batches
from strom.protocol.records import iter_records
from strom.replication.partition_replication import UNKNOWN_OFFSET, IsrChange
from strom.server.replica.fetch_session import PartitionFetch, SessionPartition
from strom.server.replica.replica_manager import (
    READ_LOG_END,
    FetchParams,
    FollowTarget,
    ReplicaManager,
)
from strom.storage.leader_epoch_cache import EpochEndOffset
from strom.storage.log_manager import LogManager
from strom.storage.partition_log import PartitionLog

TP = TopicPartition("orders", 0)
LAG_MS = 1000


def registration(
    leader: int, epoch: int, isr: tuple[int, ...] = (1, 2), partition_epoch: int = 0
) -> PartitionRegistration:
    return PartitionRegistration(
        replicas=(1, 2),
        isr=isr,
        leader=leader,
        leader_epoch=epoch,
        partition_epoch=partition_epoch,
    )


class Broker:
    def __init__(
        self, node_id: int, tmp_path: Path, clock: ManualClock, timer: ManualTimer | None = None
    ) -> None:
        self.clock = clock
        self.timer = timer
        self.metadata = MutableMetadata(MetadataImage.empty())
        self.log_manager = LogManager(tmp_path / f"broker-{node_id}", clock)
        self.proposed: list[tuple[int, IsrChange]] = []
        self.replica_manager = self._manager(node_id)

    def _manager(self, node_id: int) -> ReplicaManager:
        manager = ReplicaManager(
            node_id=node_id,
            log_manager=self.log_manager,
            metadata=self.metadata,
            config=ServerConfig({"replica.lag.time.max.ms": str(LAG_MS)}),
            clock=self.clock,
            timer=self.timer,
        )
        manager.isr_change_sender = lambda tp, epoch, change: self.proposed.append((epoch, change))
        return manager

    def set(self, partition: PartitionRegistration) -> dict[TopicPartition, FollowTarget]:
        """Publish ``partition`` as the metadata's; what the fetchers are told to follow."""
        self.metadata.image = image_of({"orders": {0: partition}})
        self.log_manager.get_or_create(TP)
        delta = MetadataDelta(MetadataImage.empty())
        for record in self.metadata.image.records():
            delta.replay(record)
        return self.replica_manager.apply_metadata(delta, self.metadata.image).follow

    def produce(self, count: int, value: bytes) -> None:
        [(_, result)] = self.replica_manager.append_to_local_log(
            [(TP, batch(count, value=value))], required_acks=1
        )
        assert result.error == ErrorCode.none

    @property
    def log(self) -> PartitionLog:
        log = self.log_manager.get(TP)
        assert log is not None
        return log

    def values(self) -> list[tuple[int, int, bytes | None]]:
        """(offset, leader epoch, first value) of each batch."""
        data = self.log.read_bytes(0, max_bytes=1 << 20)
        found, _ = scan_batches(data)
        return [
            (h.base_offset, h.partition_leader_epoch, next(iter_records(data[p:])).value)
            for p, h in found
        ]


def fetch(leader: Broker, follower: Broker, epoch: int) -> ErrorCode:
    """One fetch of the follower's fetcher from ``leader`` (what ``ReplicaFetcher`` does)."""
    log = follower.log
    read = leader.replica_manager.read_for_follower(
        TP,
        replica_id=follower.replica_manager.node_id,
        fetch_offset=log.log_end_offset,
        max_bytes=1 << 20,
        current_leader_epoch=epoch,
        last_fetched_epoch=log.leader_epochs.latest_epoch,
    )
    try:
        if read.error != ErrorCode.none:
            return read.error
        if read.diverging_epoch is not None:
            follower.replica_manager.truncate_follower(
                TP, leader_epoch=epoch, diverging=EpochEndOffset(*read.diverging_epoch)
            )
            return ErrorCode.none
        follower.replica_manager.append_as_follower(
            TP,
            b"".join(region.read() for region in read.regions),
            leader_epoch=epoch,
            high_watermark=read.high_watermark,
            log_start_offset=read.log_start_offset,
        )
        return ErrorCode.none
    finally:
        read.close()


@pytest.fixture
def brokers(tmp_path: Path) -> Iterator[tuple[Broker, Broker]]:
    clock = ManualClock()
    pair = (Broker(1, tmp_path, clock), Broker(2, tmp_path, clock))
    yield pair
    for broker in pair:
        broker.log_manager.close_without_flush()


def test_the_follower_catches_up_and_the_high_watermark_follows(
    brokers: tuple[Broker, Broker],
) -> None:
    a, b = brokers
    assert a.set(registration(leader=1, epoch=0)) == {}
    assert b.set(registration(leader=1, epoch=0)) == {TP: FollowTarget(1, 0)}
    a.produce(3, b"a")
    assert a.replica_manager.partition(TP).log.high_watermark == 0  # b has not fetched
    fetch(a, b, 0)
    assert b.log.log_end_offset == 3
    fetch(a, b, 0)  # reports offset 3: the high watermark moves, and reaches b
    assert a.replica_manager.partition(TP).log.high_watermark == 3
    assert a.replica_manager.is_acknowledged(TP, 3) == ErrorCode.none
    assert b.replica_manager.high_watermarks() == {TP: 3}
    assert a.values() == b.values()


def test_kip_101_a_leader_change_does_not_keep_two_records_at_one_offset(
    brokers: tuple[Broker, Broker],
) -> None:
    """A writes m0 and m1 in epoch 0, B has only m0 when A dies; B leads epoch 1 and writes
    m1' at offset 1. A comes back as a follower: it must drop m1, then take m1'."""
    a, b = brokers
    a.set(registration(leader=1, epoch=0))
    b.set(registration(leader=1, epoch=0))
    a.produce(1, b"x")
    fetch(a, b, 0)
    a.produce(1, b"y")  # m1, never replicated
    b.set(registration(leader=2, epoch=1, isr=(2,), partition_epoch=1))
    b.produce(1, b"z")  # m1' at offset 1, epoch 1
    a.set(registration(leader=2, epoch=1, isr=(2,), partition_epoch=1))
    assert fetch(b, a, 1) == ErrorCode.none  # diverging: epoch 0 ends at 1 on B
    assert a.log.log_end_offset == 1
    fetch(b, a, 1)
    assert a.values() == b.values() == [(0, 0, b"x0"), (1, 1, b"z0")]


def test_a_leader_that_appended_nothing_in_its_epoch_follows_again(
    brokers: tuple[Broker, Broker],
) -> None:
    """B leads epoch 1 and appends nothing, then A leads epoch 2. B's last epoch (1, begun at
    its log end) is one A never had: the diverging answer must drop it, or every fetch of B
    diverges again and it never catches up (found by the replica simulation)."""
    a, b = brokers
    a.set(registration(leader=1, epoch=0))
    b.set(registration(leader=1, epoch=0))
    a.produce(1, b"x")
    fetch(a, b, 0)
    b.set(registration(leader=2, epoch=1, partition_epoch=1))
    assert b.log.leader_epochs.latest_epoch == 1
    for broker in (a, b):
        broker.set(registration(leader=1, epoch=2, partition_epoch=2))
    a.produce(1, b"y")
    fetch(a, b, 2)  # diverging: A's epoch 0 ends at 1
    assert b.log.leader_epochs.latest_epoch == 0
    fetch(a, b, 2)
    assert a.values() == b.values() == [(0, 0, b"x0"), (1, 2, b"y0")]


def test_a_stale_follower_epoch_is_fenced(brokers: tuple[Broker, Broker]) -> None:
    a, b = brokers
    a.set(registration(leader=1, epoch=3))
    b.set(registration(leader=1, epoch=3))
    assert fetch(a, b, 2) == ErrorCode.fenced_leader_epoch
    assert fetch(a, b, 4) == ErrorCode.unknown_leader_epoch
    with pytest.raises(KafkaError) as refused:
        b.replica_manager.append_as_follower(
            TP, b"", leader_epoch=2, high_watermark=0, log_start_offset=0
        )
    assert refused.value.error_code == ErrorCode.fenced_leader_epoch


def test_a_lagging_follower_is_proposed_out_of_the_isr_then_back(
    brokers: tuple[Broker, Broker],
) -> None:
    a, b = brokers
    a.set(registration(leader=1, epoch=0))
    b.set(registration(leader=1, epoch=0))
    a.produce(2, b"a")
    a.clock.advance(LAG_MS + 1)
    a.replica_manager.check_isr()
    [(epoch, change)] = a.proposed
    assert (epoch, change.isr, change.removed) == (0, (1,), (2,))
    a.replica_manager.isr_change_done(
        TP, leader_epoch=0, change=change, isr=(1,), partition_epoch=1
    )
    assert a.replica_manager.partition(TP).isr == (1,)
    assert a.replica_manager.partition(TP).log.high_watermark == 2  # the ISR is the leader alone
    fetch(a, b, 0)
    fetch(a, b, 0)  # at the high watermark: in sync again
    assert a.proposed[-1][1].added == (2,)


def test_min_isr_refuses_acks_all_before_and_after_the_append(
    brokers: tuple[Broker, Broker],
) -> None:
    a, _ = brokers
    a.metadata.image = image_of(
        {"orders": {0: registration(leader=1, epoch=0)}}, {"orders": {"min.insync.replicas": "2"}}
    )
    a.log_manager.get_or_create(TP)
    [(_, result)] = a.replica_manager.append_to_local_log([(TP, batch())], required_acks=-1)
    assert result.error == ErrorCode.none
    a.clock.advance(LAG_MS + 1)  # the follower fell behind, and is removed
    a.replica_manager.check_isr()
    [(_, change)] = a.proposed
    a.replica_manager.isr_change_done(
        TP, leader_epoch=0, change=change, isr=(1,), partition_epoch=1
    )
    outcome = a.replica_manager.is_acknowledged(TP, 1)
    assert outcome == ErrorCode.not_enough_replicas_after_append
    [(_, refused)] = a.replica_manager.append_to_local_log([(TP, batch())], required_acks=-1)
    assert refused.error == ErrorCode.not_enough_replicas


def test_a_marker_below_min_isr_is_refused_before_it_is_appended(
    brokers: tuple[Broker, Broker],
) -> None:
    """WriteTxnMarkers writes as acks=all: below min ISR nothing is appended, so a
    coordinator's retries cannot pile up markers in the log."""
    a, _ = brokers
    a.metadata.image = image_of(
        {"orders": {0: registration(leader=1, epoch=0, isr=(1,))}},
        {"orders": {"min.insync.replicas": "2"}},
    )
    a.log_manager.get_or_create(TP)
    code = a.replica_manager.write_txn_marker(
        TP, producer_id=7, producer_epoch=0, commit=True, coordinator_epoch=0
    )
    assert (code, a.log.log_end_offset) == (ErrorCode.not_enough_replicas, 0)


def test_becoming_a_follower_fails_waiting_produces(brokers: tuple[Broker, Broker]) -> None:
    a, _ = brokers
    a.set(registration(leader=1, epoch=0))
    a.produce(1, b"a")
    assert a.replica_manager.is_acknowledged(TP, 1) is None
    followed = a.set(registration(leader=2, epoch=1, partition_epoch=1))
    assert followed == {TP: FollowTarget(2, 1)}
    assert a.replica_manager.is_acknowledged(TP, 1) == ErrorCode.not_leader_or_follower


def test_out_of_range_follower_is_cut_or_restarted(brokers: tuple[Broker, Broker]) -> None:
    _, b = brokers
    b.set(registration(leader=1, epoch=0))
    b.replica_manager.follower(TP, 0)
    b.log.append_as_follower(batch(5))
    assert b.replica_manager.reset_follower(TP, leader_epoch=0, leader_start=0, leader_end=2) == 0
    b.log.append_as_follower(batch(3))
    assert b.replica_manager.reset_follower(TP, leader_epoch=0, leader_start=7, leader_end=9) == 7
    assert b.log.log_start_offset == 7


def test_the_high_watermark_checkpoint_is_read_back(tmp_path: Path) -> None:
    clock = ManualClock()
    first = Broker(1, tmp_path, clock)
    first.set(registration(leader=1, epoch=0, isr=(1,)))
    first.produce(4, b"a")
    first.replica_manager.checkpoint_high_watermarks()
    text = (first.log_manager.data_dir / "replication-offset-checkpoint").read_text()
    assert text.splitlines() == ["0", "1", "orders 0 4"]
    first.log_manager.close()
    second = Broker(1, tmp_path, clock)
    second.set(registration(leader=2, epoch=1, partition_epoch=1))
    assert second.replica_manager.high_watermarks() == {TP: 4}
    second.log_manager.close_without_flush()


def test_the_high_watermark_checkpoint_is_read_on_the_loop_and_written_off_it(
    tmp_path: Path,
) -> None:
    """The offsets are those at the call; the job (fsyncs included) runs on a worker thread
    while the loop goes on, as the broker's periodic task runs it."""
    broker = Broker(1, tmp_path, ManualClock())
    broker.set(registration(leader=1, epoch=0, isr=(1,)))
    broker.produce(4, b"a")
    job = broker.replica_manager.high_watermark_checkpoint()
    broker.produce(2, b"b")  # after the call: not in this checkpoint
    path = broker.log_manager.data_dir / "replication-offset-checkpoint"
    assert not path.exists()
    wrote_on: list[str] = []

    def run() -> None:
        wrote_on.append(threading.current_thread().name)
        job()

    async def checkpoint() -> None:
        await asyncio.to_thread(run)

    asyncio.run(checkpoint())
    assert wrote_on != [threading.main_thread().name]
    assert path.read_text().splitlines() == ["0", "1", "orders 0 4"]
    broker.log_manager.close_without_flush()


def test_a_fenced_follower_does_not_hold_back_the_acks_of_the_others(tmp_path: Path) -> None:
    """Issue 25: broker 3 goes silent and the controller fences it and takes it out of the ISR.
    Broker 2's next fetch must acknowledge the leader's acks=all write at once, not after 3
    has been out of sync for the lag time (a hung fetch to 3 stalled every partition)."""
    clock = ManualClock()
    leader = Broker(1, tmp_path, clock)
    three = PartitionRegistration(
        replicas=(1, 2, 3), isr=(1, 2, 3), leader=1, leader_epoch=0, partition_epoch=0
    )
    leader.set(three)
    manager = leader.replica_manager

    def follower_fetch(replica_id: int, offset: int) -> None:
        read = manager.read_for_follower(
            TP,
            replica_id=replica_id,
            replica_epoch=1,
            fetch_offset=offset,
            max_bytes=1 << 20,
            current_leader_epoch=0,
            last_fetched_epoch=-1,
        )
        assert read.error == ErrorCode.none
        read.close()

    for replica_id in (2, 3):
        follower_fetch(replica_id, 0)
    leader.produce(1, b"a")
    assert manager.is_acknowledged(TP, 1) is None
    image = image_of({"orders": {0: dataclasses.replace(three, isr=(1, 2), partition_epoch=1)}})
    brokers = dict(image.cluster.brokers)
    brokers[3] = dataclasses.replace(brokers[3], fenced=True)
    leader.metadata.image = dataclasses.replace(image, cluster=ClusterImage(brokers))
    clock.advance(LAG_MS // 2)  # 3 is still caught up by the lag time, but fenced
    follower_fetch(2, 1)
    assert manager.partition(TP).log.high_watermark == 1
    assert manager.is_acknowledged(TP, 1) == ErrorCode.none


def test_a_fetch_of_an_earlier_life_of_the_follower_is_refused(tmp_path: Path) -> None:
    """KIP-903: a fetch in a broker epoch older than the follower's registered one (a long
    poll of its life before a restart, answered late) must not move its position: it would
    count records the restarted follower lost, and move the high watermark past them (found
    by the replica simulation, seed 74; Kafka's ``Replica.updateFetchStateOrThrow``)."""
    clock = ManualClock()
    leader = Broker(1, tmp_path, clock)
    leader.set(registration(leader=1, epoch=0, isr=(1, 2)))
    manager = leader.replica_manager
    leader.produce(2, b"a")
    image = leader.metadata.image
    brokers = dict(image.cluster.brokers)
    earlier = brokers[2].epoch
    brokers[2] = dataclasses.replace(brokers[2], epoch=earlier + 1)  # broker 2 restarted
    leader.metadata.image = dataclasses.replace(image, cluster=ClusterImage(brokers))
    read = manager.read_for_follower(
        TP,
        replica_id=2,
        replica_epoch=earlier,
        fetch_offset=2,
        max_bytes=1 << 20,
        current_leader_epoch=0,
        last_fetched_epoch=0,
    )
    read.close()
    assert read.error == ErrorCode.not_leader_or_follower
    assert manager.partition(TP).log.high_watermark == 0
    assert manager.is_acknowledged(TP, 2) is None


def test_a_long_poll_answered_later_does_not_record_the_follower_again(tmp_path: Path) -> None:
    """A follower's fetch moves its position when it arrives, not again when its long poll
    is answered (Kafka's ``DelayedFetch`` reads with ``readFromPurgatory``, which does not
    update the follower's fetch state). Here the follower's broker restarts (registers anew:
    its position is forgotten) while its fetch of before, which says no broker epoch (older
    than v15), waits; the answer must not bring that earlier life's position back, which
    would let the leader take the restarted follower, which may have lost records, into the
    ISR (found by the replica simulation with bouncing followers, seed 489)."""
    clock = ManualClock()
    timer = ManualTimer(clock)
    leader = Broker(1, tmp_path, clock, timer)
    leader.set(registration(leader=1, epoch=0, isr=(1,)))
    leader.produce(2, b"a")
    manager = leader.replica_manager
    replication = manager.partition(TP).replication
    assert replication is not None
    params = FetchParams(
        replica_id=2,
        max_wait_ms=100,
        min_bytes=1,
        max_bytes=1 << 20,
        isolation_level=READ_LOG_END,
    )
    fetch = PartitionFetch(
        fetch_offset=2, partition_max_bytes=1 << 20, current_leader_epoch=0, last_fetched_epoch=0
    )

    async def scenario() -> None:
        poll = asyncio.ensure_future(
            manager.fetch_messages(params, [(SessionPartition(TP.topic, TP.partition), fetch)])
        )
        await asyncio.sleep(0)
        assert not poll.done()
        assert replication.followers[2].log_end_offset == 2
        image = leader.metadata.image
        delta = MetadataDelta(image)
        delta.replay(
            RegisterBrokerRecord(
                broker_id=2,
                incarnation_id=image.cluster.brokers[2].incarnation_id,
                broker_epoch=image.cluster.brokers[2].epoch + 1,
                endpoints=(),
                fenced=False,
            )
        )  # broker 2 restarted
        leader.metadata.image = delta.apply()
        manager.apply_metadata(delta, leader.metadata.image)
        assert replication.followers[2].log_end_offset == UNKNOWN_OFFSET
        timer.advance_to(clock.monotonic_ms() + 100)
        [read] = await asyncio.wait_for(poll, timeout=2)
        read.close()
        assert read.error == ErrorCode.none

    asyncio.run(scenario())
    assert replication.followers[2].log_end_offset == UNKNOWN_OFFSET
    leader.log_manager.close_without_flush()


def expansion_proposed(a: Broker, b: Broker) -> IsrChange:
    """Leader 1 alone in the ISR, 10 records; follower 2 catches up and is proposed back."""
    a.set(registration(leader=1, epoch=0, isr=(1,)))
    b.set(registration(leader=1, epoch=0, isr=(1,)))
    a.produce(10, b"a")
    fetch(a, b, 0)
    fetch(a, b, 0)
    [(_, change)] = a.proposed
    assert change.added == (2,)
    return change


def test_a_lost_answer_keeps_the_expansion_counting(brokers: tuple[Broker, Broker]) -> None:
    """The controller committed ISR {1, 2} but its answer was lost, and leader 1 is cut off
    while 2 is elected: 1 must not acknowledge acks=all writes that only it has (issue 25's
    reproduction; Kafka's handleAlterPartitionError keeps the maximal ISR)."""
    a, b = brokers
    change = expansion_proposed(a, b)
    manager = a.replica_manager
    assert manager.isr_change_done(TP, leader_epoch=0, change=change, isr=None, error=None)
    a.clock.advance(LAG_MS + 1)  # follower 2 now follows leader 2: it never fetches again
    [(_, result)] = manager.append_to_local_log([(TP, batch(10))], required_acks=-1)
    assert result.error == ErrorCode.none
    manager.check_isr()
    assert manager.is_acknowledged(TP, 20) is None
    assert a.log.high_watermark == 10
    assert a.proposed == [(0, change)]  # nothing else proposed while it is unsettled


@pytest.mark.parametrize(
    ("error", "sent_again", "kept"),
    [
        (None, True, True),
        (ErrorCode.request_timed_out, True, True),
        (ErrorCode.not_controller, True, True),
        (ErrorCode.invalid_update_version, False, True),
        (ErrorCode.fenced_leader_epoch, False, True),
        (ErrorCode.ineligible_replica, False, False),
        (ErrorCode.operation_not_attempted, False, False),
    ],
)
def test_only_a_not_applied_answer_drops_a_pending_change(
    brokers: tuple[Broker, Broker], error: ErrorCode | None, sent_again: bool, kept: bool
) -> None:
    a, b = brokers
    change = expansion_proposed(a, b)
    manager = a.replica_manager
    again = manager.isr_change_done(TP, leader_epoch=0, change=change, isr=None, error=error)
    replication = manager.partition(TP).replication
    assert replication is not None
    assert (again, replication.pending is change) == (sent_again, kept)


def test_the_metadata_settles_a_change_whose_answer_never_came(
    brokers: tuple[Broker, Broker],
) -> None:
    a, b = brokers
    change = expansion_proposed(a, b)
    manager = a.replica_manager
    manager.isr_change_done(
        TP, leader_epoch=0, change=change, isr=None, error=ErrorCode.invalid_update_version
    )
    a.set(registration(leader=1, epoch=0, isr=(1, 2), partition_epoch=1))
    partition = manager.partition(TP)
    assert partition.replication is not None
    assert (partition.isr, partition.replication.pending) == ((1, 2), None)
    # a retry still under way learns that it is settled
    assert not manager.isr_change_done(TP, leader_epoch=0, change=change, isr=None, error=None)


def test_an_isr_shrink_from_the_metadata_moves_the_high_watermark(
    brokers: tuple[Broker, Broker],
) -> None:
    """The controller fences follower 2 and takes it out of the ISR: the leader's waiting
    acks=all write is acknowledged as it applies that metadata, with no later fetch or append
    to move the high watermark (Kafka's makeLeader ends with maybeIncrementLeaderHW; found by
    the replica simulation, where a lone write on RF 2 waited for its timeout)."""
    leader, _ = brokers
    leader.set(registration(leader=1, epoch=0))
    manager = leader.replica_manager
    read = manager.read_for_follower(
        TP,
        replica_id=2,
        replica_epoch=1,
        fetch_offset=0,
        max_bytes=1 << 20,
        current_leader_epoch=0,
        last_fetched_epoch=-1,
    )
    read.close()
    leader.produce(1, b"a")
    assert manager.is_acknowledged(TP, 1) is None
    image = image_of({"orders": {0: registration(leader=1, epoch=0, isr=(1,), partition_epoch=1)}})
    cluster = dict(image.cluster.brokers)
    cluster[2] = dataclasses.replace(cluster[2], fenced=True)
    leader.metadata.image = image = dataclasses.replace(image, cluster=ClusterImage(cluster))
    delta = MetadataDelta(MetadataImage.empty())
    for record in image.records():
        delta.replay(record)
    manager.apply_metadata(delta, image)
    assert leader.log.high_watermark == 1
    assert manager.is_acknowledged(TP, 1) == ErrorCode.none


def test_a_reassignment_completed_by_the_leaders_own_isr_change_drops_the_removed_replica(
    tmp_path: Path,
) -> None:
    """Replicas (1, 2) move to (1, 3): follower 3 joins the ISR, and the controller completes
    the reassignment in the record of that ISR change, so the answer and the metadata carry the
    same partition epoch. The leader must still learn the new replicas from that metadata: with
    replica 2 kept as a follower, its next fetch was proposed back into the ISR, refused by the
    controller (INVALID_REQUEST) and retried forever, the pending change counting 2 in the
    maximal ISR, so acks=all writes were never acknowledged (found by self-balancing's test)."""
    clock = ManualClock()
    leader, removed, added = (Broker(b, tmp_path, clock) for b in (1, 2, 3))
    try:
        moving = dataclasses.replace(registration(leader=1, epoch=0), replicas=(1, 3, 2))
        for broker in (leader, removed, added):
            broker.set(moving)
        assert fetch(leader, added, 0) == ErrorCode.none
        [(_, change)] = leader.proposed
        assert change.added == (3,)
        manager = leader.replica_manager
        manager.isr_change_done(TP, leader_epoch=0, change=change, isr=(1, 3), partition_epoch=1)
        leader.set(dataclasses.replace(moving, replicas=(1, 3), isr=(1, 3), partition_epoch=1))
        # a last fetch before it learns it is no replica any more
        assert fetch(leader, removed, 0) == ErrorCode.not_leader_or_follower
        replication = manager.partition(TP).replication
        assert replication is not None
        assert (replication.replicas, replication.pending) == ((1, 3), None)
        assert leader.proposed == [(0, change)]
        leader.produce(1, b"a")
        assert fetch(leader, added, 0) == ErrorCode.none
        assert fetch(leader, added, 0) == ErrorCode.none
        assert leader.log.high_watermark == 1
    finally:
        for broker in (leader, removed, added):
            broker.log_manager.close_without_flush()


def test_a_change_proposed_before_a_completed_reassignment_is_seen_stays_pending(
    tmp_path: Path,
) -> None:
    """Replicas (1, 4, 2, 3) move to (1, 4, 2): follower 4 joins the ISR and the controller
    completes the reassignment in that record (epoch 1). Before the leader sees the metadata,
    follower 2 catches up and the leader proposes it into the ISR, based on epoch 1: the
    controller may commit that, so when the metadata of epoch 1 arrives with the new replicas,
    the proposal must stay pending (its replica counting in the maximal ISR) until answered."""
    clock = ManualClock()
    leader, kept, removed, added = (Broker(b, tmp_path, clock) for b in (1, 2, 3, 4))
    try:
        moving = dataclasses.replace(
            registration(leader=1, epoch=0, isr=(1,)), replicas=(1, 4, 2, 3)
        )
        for broker in (leader, kept, removed, added):
            broker.set(moving)
        manager = leader.replica_manager
        assert fetch(leader, added, 0) == ErrorCode.none
        [(_, joined)] = leader.proposed
        manager.isr_change_done(TP, leader_epoch=0, change=joined, isr=(1, 4), partition_epoch=1)
        assert fetch(leader, kept, 0) == ErrorCode.none
        [_, (_, rejoined)] = leader.proposed
        assert (rejoined.added, rejoined.partition_epoch) == ((2,), 1)
        leader.set(dataclasses.replace(moving, replicas=(1, 4, 2), isr=(1, 4), partition_epoch=1))
        replication = manager.partition(TP).replication
        assert replication is not None
        assert (replication.replicas, replication.pending) == ((1, 4, 2), rejoined)
        assert replication.maximal_isr == (1, 2, 4)
    finally:
        for broker in (leader, kept, removed, added):
            broker.log_manager.close_without_flush()
