"""One simulated broker: the real ``ReplicaManager`` (its ``Partition``, purgatories, follower
fetch path) over a real ``LogManager`` on disk, the real ``ReplicaFetcherManager``,
``AlterPartitionManager`` and group and transaction coordinator runtimes (loaded and unloaded
by leader epoch as the metadata moves their partitions' leadership) on the simulation's timer,
their requests carried by the simulated network (:class:`SimBrokerClients`,
:class:`SimControllerChannel`), and the leader's side of the requests they send (Fetch through
``ReplicaManager.fetch_messages``, ListOffsets, WriteTxnMarkers through its real handler)."""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, cast

from kio.schema.alter_partition.v3.request import AlterPartitionRequest
from kio.schema.alter_partition.v3.response import AlterPartitionResponse
from kio.schema.fetch.v15.response import (
    EpochEndOffset,
    FetchableTopicResponse,
    FetchResponse,
    PartitionData,
)
from kio.schema.list_offsets.v7.request import ListOffsetsRequest
from kio.schema.list_offsets.v7.response import (
    ListOffsetsPartitionResponse,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
)
from kio.schema.write_txn_markers.v1.request import WriteTxnMarkersRequest
from kio.static.primitive import Records, i32, i32Timedelta, i64
from kio.static.protocol import RequestPayload
from sim_controller import PARTITIONS, TP
from sim_faults import (
    ALTER_TIMEOUT_MS,
    CHECKPOINT_MS,
    CONTROLLER,
    FETCH_BACKOFF_MS,
    FETCH_SOCKET_TIMEOUT_MS,
    FETCH_WAIT_MAX_MS,
    ISR_CHECK_MS,
    PRODUCE_TIMEOUT_MS,
)

from strom.client.async_client import RequestFailed
from strom.common import ErrorCode, KafkaError, TopicPartition
from strom.metadata import MetadataDelta, MetadataImage
from strom.protocol.api import Request, make_request_header
from strom.protocol.batch import scan_batches
from strom.protocol.fetch_request import FollowerFetch
from strom.replication.partition_replication import PartitionReplication
from strom.server.api.handler_table import RequestContext
from strom.server.channel.auto_topics import AutoTopicCreator
from strom.server.channel.controller_channel import ControllerUnavailable
from strom.server.coordinator.group_coordinator_runtime import GroupCoordinatorRuntime
from strom.server.coordinator.txn_coordinator_runtime import TxnCoordinatorRuntime
from strom.server.handlers.write_txn_markers import WriteTxnMarkersHandler
from strom.server.replica.alter_partition_manager import AlterPartitionManager
from strom.server.replica.fetch_session import PartitionFetch, SessionPartition
from strom.server.replica.replica_fetcher import FetcherSettings, ReplicaFetcherManager
from strom.server.replica.replica_manager import READ_LOG_END, FetchParams, ReplicaManager
from strom.storage.log_manager import LogManager
from strom.storage.partition_log import PartitionLog

if TYPE_CHECKING:
    from replica_simulation import Simulation

_NO_TIME = i32Timedelta.parse(datetime.timedelta(0))


class SimBroker:
    """One broker over its data dir (see the module doc)."""

    def __init__(self, sim: Simulation, node_id: int) -> None:
        self.sim = sim
        self.node_id = node_id
        self.data_dir = sim.root / f"broker-{node_id}"
        self.alive = False
        self.life = 0
        """One more at each start and crash: timers and messages of an earlier life are void."""
        self.broker_epoch = -1
        self.applied = 0
        self.log_manager: LogManager | None = None
        self.metadata = _Metadata()
        self.replica_manager: ReplicaManager | None = None
        self.fetchers: ReplicaFetcherManager | None = None
        self.isr_changes: AlterPartitionManager | None = None
        self.group_runtime: GroupCoordinatorRuntime | None = None
        self.txn_runtime: TxnCoordinatorRuntime | None = None
        self.serving: set[asyncio.Task[None]] = set()
        """The answers this life is working on (a long-polled Fetch)."""
        self.served: set[asyncio.Task[None]] = set()
        """Other brokers' answers to this life's requests, in the works."""
        self.stopping: list[asyncio.Task[None]] = []
        """The fetchers and the AlterPartition manager of its last life, stopping."""
        self.lose = 0
        """Batches its log loses at the next start (a power cut took its unflushed tail)."""
        self.restart_after = 0
        """It starts again only once every live broker applied this much metadata."""
        self.hold_metadata_until = 0
        """No metadata reaches it until every other live broker applied this much."""
        self.cut_leader_on_rejoin = False
        """A bounced follower: its leader is cut off (the answer lost) when the controller
        commits the ISR expansion that takes it back."""
        self.starting_until_ms = 0
        """No metadata reaches it before this time: a slow start (the controller publishes
        again)."""

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self, broker_epoch: int, lose: int = 0) -> None:
        sim = self.sim
        self.life += 1
        self.alive = True
        self.broker_epoch = broker_epoch
        self.log_manager = LogManager(self.data_dir, sim.clock)
        for tp in PARTITIONS:
            log = self.log_manager.get_or_create(tp)
            if lose:
                batches_left = sorted(batch_map(log))
                cut = batches_left[-lose] if len(batches_left) >= lose else 0
                log.truncate_to(cut)
        self.metadata = _Metadata()
        self.applied = 0
        self.replica_manager = ReplicaManager(
            node_id=self.node_id,
            log_manager=self.log_manager,
            metadata=self.metadata,
            config=sim.config,
            clock=sim.clock,
            timer=sim.timer,
        )
        self.isr_changes = AlterPartitionManager(
            node_id=self.node_id,
            broker_epoch=lambda: self.broker_epoch,
            channel=SimControllerChannel(self),
            replica_manager=self.replica_manager,
            timeout=ALTER_TIMEOUT_MS / 1000,
            timer=sim.timer,
        )
        self.replica_manager.isr_change_sender = self.isr_changes.send
        self.fetchers = ReplicaFetcherManager(
            node_id=self.node_id,
            broker_epoch=lambda: self.broker_epoch if sim.faults.replica_epochs else -1,
            replica_manager=self.replica_manager,
            clients=SimBrokerClients(self),
            settings=FetcherSettings(
                wait_max_ms=FETCH_WAIT_MAX_MS,
                backoff_ms=FETCH_BACKOFF_MS,
                socket_timeout_ms=FETCH_SOCKET_TIMEOUT_MS,
            ),
            clock=sim.clock,
            timer=sim.timer,
        )
        no_topic_creation = cast(AutoTopicCreator, None)  # the controller made the topics
        self.group_runtime = GroupCoordinatorRuntime(
            config=sim.config,
            replica_manager=self.replica_manager,
            auto_topics=no_topic_creation,
            clock=sim.clock,
            timer=sim.timer,
        )
        self.txn_runtime = TxnCoordinatorRuntime(
            config=sim.config,
            replica_manager=self.replica_manager,
            auto_topics=no_topic_creation,
            clock=sim.clock,
            marker_clients=SimBrokerClients(self),
            timer=sim.timer,
        )
        self.markers_handler = WriteTxnMarkersHandler(
            replica_manager=self.replica_manager, timeout_ms=PRODUCE_TIMEOUT_MS
        )
        self.group_runtime.start()
        self.txn_runtime.start()
        self._every(ISR_CHECK_MS, self.manager.check_isr)
        self._every(CHECKPOINT_MS, self.manager.checkpoint_high_watermarks)

    def crash(self) -> None:
        """The process dies: its tasks stop (before the simulation's clock moves again), its
        log keeps only what was flushed."""
        self.alive = False
        self.life += 1
        for task in self.serving:
            task.cancel()
        if not self.sim.faults.replica_epochs:
            # A long-polled fetch of this life would otherwise be read again, and recorded,
            # after the restart: the hole KIP-903's broker epochs close (not the code's).
            for task in self.served:
                task.cancel()
        assert self.fetchers is not None and self.isr_changes is not None
        loop = asyncio.get_running_loop()
        self.stopping = [
            loop.create_task(self.fetchers.stop()),
            loop.create_task(self.isr_changes.stop()),
            loop.create_task(self.groups.stop()),
            loop.create_task(self.txns.stop()),
        ]
        assert self.log_manager is not None
        self.log_manager.close_without_flush()
        self.log_manager = self.replica_manager = None
        self.fetchers = self.isr_changes = None
        self.group_runtime = self.txn_runtime = None

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
    def groups(self) -> GroupCoordinatorRuntime:
        assert self.group_runtime is not None
        return self.group_runtime

    @property
    def txns(self) -> TxnCoordinatorRuntime:
        assert self.txn_runtime is not None
        return self.txn_runtime

    @property
    def log(self) -> PartitionLog:
        return self.log_of(TP)

    def log_of(self, tp: TopicPartition) -> PartitionLog:
        assert self.log_manager is not None
        log = self.log_manager.get(tp)
        assert log is not None
        return log

    def leads(self, tp: TopicPartition = TP) -> int | None:
        """The leader epoch this broker leads ``tp`` in, if it does."""
        replication = self._replication(tp)
        return None if replication is None else replication.leader_epoch

    def leader_isr(self) -> tuple[int, ...]:
        """The ISR as this broker knows it while it leads (empty when it does not)."""
        replication = self._replication()
        return () if replication is None else replication.isr

    def _replication(self, tp: TopicPartition = TP) -> PartitionReplication | None:
        partition = self.manager.local_partitions.get(tp)
        return None if partition is None else partition.replication

    # --- metadata ----------------------------------------------------------------------------

    def metadata_sender(self, end: int) -> Callable[[], None]:
        """What delivers the controller's log up to ``end`` to this life of the broker."""
        life = self.life
        return lambda: self.on_metadata(life, end)

    def on_metadata(self, life: int, end: int) -> None:
        """The controller's log up to ``end``: replay what is new here as one delta (coalesced,
        as a broker's metadata loader does), then lead or follow as it says."""
        if (
            life != self.life
            or end <= self.applied
            or self.sim.clock.monotonic_ms() < self.starting_until_ms
        ):
            return
        if any(
            b.alive and not b.hold_metadata_until and b.applied < self.hold_metadata_until
            for b in self.sim.brokers.values()
        ):
            return  # the controller publishes again
        self.hold_metadata_until = 0
        delta = MetadataDelta(self.metadata.image)
        for records in self.sim.controller.log[self.applied : end]:
            for record in records:
                delta.replay(record)
        self.applied = end
        image = delta.apply()
        self.metadata.image = image
        assert self.fetchers is not None
        self.fetchers.apply(self.manager.apply_metadata(delta, image))
        self.groups.on_metadata(delta, image)  # after the replica manager, as the publishers
        self.txns.on_metadata(delta, image)

    # --- the leader's side of the fetchers' requests -----------------------------------------

    def serve(
        self, requester: SimBroker, body: RequestPayload, reply: Callable[[Any], object]
    ) -> None:
        """Answer a Fetch or ListOffsets from ``requester`` through ``reply``."""
        if not self.alive:
            return
        answer: Coroutine[Any, Any, Any]
        if isinstance(body, FollowerFetch):
            answer = self._fetch(body)
        elif isinstance(body, WriteTxnMarkersRequest):
            header = make_request_header(body, correlation_id=0, client_id="sim")
            context = RequestContext(
                request=Request(header=header, body=body),
                client_address=f"broker-{requester.node_id}:0",
                connection_id="sim",
            )
            answer = self.markers_handler.handle(context)
        else:
            assert isinstance(body, ListOffsetsRequest)
            answer = self._list_offsets(body)
        life = self.life

        async def run() -> None:
            response = await answer
            if self.life == life:
                reply(response)

        task = asyncio.get_running_loop().create_task(run())
        for tasks in (self.serving, requester.served):
            tasks.add(task)
            task.add_done_callback(tasks.discard)

    async def _fetch(self, body: FollowerFetch) -> FetchResponse:
        """A follower's Fetch through the real read and long poll (``fetch_messages``, the
        follower purgatory)."""
        image = self.manager.image
        params = FetchParams(
            replica_id=int(body.replica_state.replica_id),
            replica_epoch=int(body.replica_state.replica_epoch),
            max_wait_ms=int(body.max_wait.total_seconds() * 1000),
            min_bytes=int(body.min_bytes),
            max_bytes=int(body.max_bytes),
            isolation_level=READ_LOG_END,
        )
        partitions = []
        for topic in body.topics:
            topic_id = topic.topic_id
            found = None if topic_id is None else image.topics.get_topic_by_id(topic_id)
            for asked in topic.partitions:
                key = SessionPartition(
                    "" if found is None else found.name, int(asked.partition), topic.topic_id
                )
                fetch = PartitionFetch(
                    fetch_offset=int(asked.fetch_offset),
                    partition_max_bytes=int(asked.partition_max_bytes),
                    current_leader_epoch=int(asked.current_leader_epoch),
                    log_start_offset=int(asked.log_start_offset),
                    last_fetched_epoch=int(asked.last_fetched_epoch),
                )
                partitions.append((key, fetch))
        reads = await self.manager.fetch_messages(params, partitions)
        answers: dict[Any, list[PartitionData]] = {}
        for (key, _), read in zip(partitions, reads, strict=True):
            try:
                records = b"".join(region.read() for region in read.regions)
            finally:
                read.close()
            diverging = EpochEndOffset()
            if read.diverging_epoch is not None:
                diverging = EpochEndOffset(
                    epoch=i32(read.diverging_epoch[0]), end_offset=i64(read.diverging_epoch[1])
                )
            answers.setdefault(key.topic_id, []).append(
                PartitionData(
                    partition_index=i32(key.partition),
                    error_code=read.error,
                    high_watermark=i64(read.high_watermark),
                    last_stable_offset=i64(read.last_stable_offset),
                    log_start_offset=i64(read.log_start_offset),
                    diverging_epoch=diverging,
                    aborted_transactions=None,
                    records=Records(records),
                )
            )
        return FetchResponse(
            throttle_time=_NO_TIME,
            error_code=ErrorCode.none,
            responses=tuple(
                FetchableTopicResponse(topic_id=topic_id, partitions=tuple(found))
                for topic_id, found in answers.items()
            ),
        )

    async def _list_offsets(self, body: ListOffsetsRequest) -> ListOffsetsResponse:
        """A replica's ListOffsets (the fetcher's reset after OFFSET_OUT_OF_RANGE)."""
        topics = []
        for topic in body.topics:
            partitions = []
            for asked in topic.partitions:
                tp = TopicPartition(str(topic.name), int(asked.partition_index))
                try:
                    found = self.manager.list_offset(
                        tp,
                        timestamp=int(asked.timestamp),
                        isolation_level=None,
                        current_leader_epoch=int(asked.current_leader_epoch),
                    )
                except KafkaError as error:
                    answer = ListOffsetsPartitionResponse(
                        partition_index=asked.partition_index, error_code=error.error_code
                    )
                else:
                    answer = ListOffsetsPartitionResponse(
                        partition_index=asked.partition_index,
                        error_code=ErrorCode.none,
                        timestamp=i64(found.timestamp),
                        offset=i64(found.offset),
                        leader_epoch=i32(found.leader_epoch),
                    )
                partitions.append(answer)
            topics.append(ListOffsetsTopicResponse(name=topic.name, partitions=tuple(partitions)))
        return ListOffsetsResponse(throttle_time=_NO_TIME, topics=tuple(topics))


class _Metadata:
    def __init__(self) -> None:
        self.image = MetadataImage.empty()


LOSE_MARKERS = 0.3
"""How often a WriteTxnMarkers request is lost while faults are drawn (it fails at its
timeout and must be sent again, or the transaction stays open in that partition)."""


class SimBrokerClients:
    """The fetchers' and the marker channel's way to other brokers (``BrokerClients``) over
    the simulated network: a request unanswered within its timeout fails, as over a hung
    connection; WriteTxnMarkers requests are lost more often (:data:`LOSE_MARKERS`)."""

    def __init__(self, broker: SimBroker) -> None:
        self._broker = broker

    async def request(
        self, node_id: int, body: RequestPayload, *, timeout: float | None = None
    ) -> Any:
        sim, source = self._broker.sim, self._broker.node_id
        target = sim.brokers[node_id]

        def reply(response: Any) -> None:
            sim.network.send(node_id, source, lambda: _resolve(answer, response))

        answer = _answer(
            sim,
            timeout,
            lambda: RequestFailed(f"broker {node_id}: no answer within the request timeout"),
        )
        requester = self._broker
        if not (
            isinstance(body, WriteTxnMarkersRequest)
            and sim.faulting
            and sim.rng.random() < LOSE_MARKERS
        ):
            sim.network.send(source, node_id, lambda: target.serve(requester, body, reply))
        return await answer

    async def close(self) -> None:
        pass


class SimControllerChannel:
    """The AlterPartition manager's way to the controller (``AlterPartitionChannel``)."""

    def __init__(self, broker: SimBroker) -> None:
        self._broker = broker

    async def send(self, body: AlterPartitionRequest, *, timeout: float) -> AlterPartitionResponse:
        sim, source = self._broker.sim, self._broker.node_id

        def reply(response: AlterPartitionResponse) -> None:
            _resolve(answer, response)

        answer = _answer(
            sim, timeout, lambda: ControllerUnavailable("no answer within the request timeout")
        )
        sim.network.send(
            source, CONTROLLER, lambda: sim.controller.alter_partition(source, body, reply)
        )
        response: AlterPartitionResponse = await answer
        return response


def _answer(
    sim: Simulation, timeout: float | None, failure: Callable[[], Exception]
) -> asyncio.Future[Any]:
    """A future for an answer, failed with ``failure()`` after ``timeout`` seconds of virtual
    time (a late answer finds it done and is dropped, as a reply to a request given up)."""
    answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
    if timeout is not None:

        def expire() -> None:
            if not answer.done():
                answer.set_exception(failure())

        handle = sim.timer.call_later(int(timeout * 1000), expire)
        answer.add_done_callback(lambda _: handle.cancel())
    return answer


def _resolve(answer: asyncio.Future[Any], response: Any) -> None:
    if not answer.done():
        answer.set_result(response)


def batch_map(log: PartitionLog, end: int | None = None) -> dict[int, tuple[int, int, int]]:
    """The log's batches by base offset (below ``end``): (base offset, last offset, CRC of
    its records, not of its offsets or leader epoch)."""
    data = log.read_bytes(log.log_start_offset, max_bytes=1 << 26)
    found, _ = scan_batches(data)
    result = {}
    for _, header in found:
        if end is not None and header.last_offset >= end:
            break
        result[header.base_offset] = (header.base_offset, header.last_offset, header.crc)
    return result
