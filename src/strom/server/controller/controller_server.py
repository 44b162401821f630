"""The controller role of a node: runs controller operations while it is the active controller.

The active controller is the leader of the Raft quorum (``strom.raft``). Each operation follows
Kafka's ``QuorumController``:

1. validate against the **written image**: the committed image plus every record this leader has
   appended but not yet seen committed (``QuorumController`` is pure: image in, records and reply
   out), under a lock, so operations see each other's effects in order;
2. append the records to the Raft log as one batch (all or none) and move the written image on;
3. release the lock (the next operation may validate at once: appends are pipelined), and wait
   until the quorum has committed the batch; only then reply.

An operation refused because this node is not the active controller raises
:class:`NotControllerError` (Kafka's NOT_CONTROLLER: the caller retries with the new active
controller). Losing the leadership drops the written image back to the committed one and fails
every operation still waiting for its commit with :class:`CommitUnknownError`: its records may
still be committed by the successor or not, so a retry could meet its own effect (a topic that
exists); a forwarded request gets REQUEST_TIMED_OUT then, as Kafka answers a request whose
outcome is unknown, and the controller's own answer only once its records are committed.

A newly elected leader first catches up: it becomes active only once everything in its log from
earlier epochs is committed and applied to the committed image, then it bootstraps an empty
cluster, gives every registered broker a fresh session and starts fencing brokers whose
heartbeats stop (``broker.session.timeout.ms``), or whose heartbeat connection closed, whose
listeners refuse connections and who sent no heartbeat since within
``broker.heartbeat.connection.close.grace.ms`` (a dead process; see ``listener_probe``).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol, TypeVar

from strom.balancer.load import LoadReports, ReplicaLoad
from strom.common import Clock, TopicPartition
from strom.common.waiting import wait_event
from strom.controller import (
    DEFAULT_METADATA_VERSION,
    AlterConfigsRequest,
    AlterConfigsResult,
    AlterPartitionReply,
    AlterPartitionRequest,
    ApiError,
    BrokerHeartbeat,
    BrokerHeartbeatReply,
    BrokerRegistrationReply,
    BrokerRegistrationRequest,
    BrokerSessions,
    ControllerResult,
    CreatePartitionsRequest,
    CreatePartitionsResult,
    CreateTopicResult,
    CreateTopicsRequest,
    DeleteTopicResult,
    DeleteTopicsRequest,
    ElectionResult,
    ElectLeadersRequest,
    FeatureUpdate,
    IncrementalAlterConfigsRequest,
    ProducerIdsBlock,
    QuorumController,
    ReassignmentRequest,
    ReassignmentResult,
)
from strom.metadata import (
    MetadataDelta,
    MetadataImage,
    MetadataProvenance,
    MetadataRecord,
    PartitionRegistration,
    UserScramCredentialRecord,
    encode_record,
)
from strom.raft import NotLeaderError
from strom.server.controller.listener_probe import ListenerProbe, probe_listeners

__all__ = [
    "CommitUnknownError",
    "ControllerServer",
    "NotControllerError",
    "OperationRunner",
    "QuorumLog",
]

log = logging.getLogger(__name__)

T = TypeVar("T")


class NotControllerError(Exception):
    """This node is not (or no longer) the active controller; retry with the new one."""


class CommitUnknownError(NotControllerError):
    """This node stopped being the active controller after it wrote the operation's records and
    before they were committed: whether they are, the successor decides (the outcome is unknown;
    not to be retried as if nothing happened)."""


class QuorumLog(Protocol):
    """What the controller needs of the Raft quorum (the node's ``RaftManager``)."""

    def append(self, records: Sequence[bytes], *, epoch: int) -> int:
        """Append one batch as the leader of ``epoch``; the offset of its last record. Raises
        when this node is not that leader."""
        ...


class OperationRunner(Protocol):
    """What a handler of an operation without a method of its own needs of the controller
    (:meth:`ControllerServer.run`)."""

    async def run(self, name: str, operation: Callable[[MetadataImage], ControllerResult[T]]) -> T:
        """Validate ``operation``, append its records, reply once they are committed. Raises
        :class:`NotControllerError`."""
        ...


class CommittedImage(Protocol):
    @property
    def image(self) -> MetadataImage: ...


@dataclass(slots=True)
class _Waiting:
    last_offset: int
    done: asyncio.Future[None]


class ControllerServer:
    """Serializes controller operations over the quorum (see the module doc)."""

    def __init__(
        self,
        controller: QuorumController,
        *,
        node_id: int,
        quorum: QuorumLog,
        committed: CommittedImage,
        clock: Clock,
        session_timeout_ms: int,
        close_grace_ms: int = -1,
        bootstrap_metadata_version: int = DEFAULT_METADATA_VERSION,
        bootstrap_scram: Sequence[UserScramCredentialRecord] = (),
        leader_balance_interval_ms: int | None = None,
    ) -> None:
        """``bootstrap_metadata_version``, ``bootstrap_scram``: the metadata.version and SCRAM
        credentials a new cluster starts with (the node's ``bootstrap.checkpoint``);
        ``leader_balance_interval_ms``: how often preferred replicas get their leadership back
        (None: never; ``auto.leader.rebalance.enable``); ``close_grace_ms``: see
        ``BrokerSessions`` (negative: off, as ``broker.heartbeat.connection.close.grace.ms``)."""
        self._balance_interval_ms = leader_balance_interval_ms
        self.controller = controller
        self._bootstrap_version = bootstrap_metadata_version
        self._bootstrap_scram = tuple(bootstrap_scram)
        self.node_id = node_id
        self._quorum = quorum
        self._committed = committed
        self._clock = clock
        self._lock = asyncio.Lock()
        self._epoch: int | None = None
        """The quorum epoch this node is the active controller of; None when it is not."""
        self._written: MetadataImage | None = None
        self._waiting: list[_Waiting] = []
        self.sessions = BrokerSessions(
            session_timeout_ms=session_timeout_ms,
            close_grace_ms=None if close_grace_ms < 0 else close_grace_ms,
        )
        self.loads = LoadReports()
        """The brokers' latest load samples (the balancer's sizes and byte rates)."""
        self._active_task: asyncio.Task[None] | None = None
        self._sessions_changed = asyncio.Event()
        self._probes: dict[int, asyncio.Task[None]] = {}
        """Per broker whose heartbeat connection closed: tries its listeners until it is heard
        from again, found dead or fenced."""
        self._failure: str | None = None
        """Why this node stopped being a controller for good (a metadata log write failed)."""
        self._while_active_tasks: list[tuple[str, Callable[[], Coroutine[Any, Any, None]]]] = []
        self._background: list[asyncio.Task[None]] = []

    def run_while_active(self, name: str, task: Callable[[], Coroutine[Any, Any, None]]) -> None:
        """Run ``task()`` each time this node becomes the active controller; cancelled when it
        stops being it (self-balancing, ``strom.balancer.enable``)."""
        self._while_active_tasks.append((name, task))

    # --- the quorum's side ------------------------------------------------------------------

    @property
    def is_active(self) -> bool:
        return self._epoch is not None

    @property
    def image(self) -> MetadataImage:
        """The written image while active (what operations validate against), else the
        committed one."""
        return self._written if self._written is not None else self._committed.image

    def activate(self, epoch: int) -> None:
        """This node leads the quorum in ``epoch`` and its committed image holds everything
        earlier epochs committed: start serving operations."""
        self._resign_now()
        if self._failure is not None:
            log.error("not taking over as the active controller: %s", self._failure)
            return
        self._epoch = epoch
        self._written = self._committed.image
        self.sessions.activate(self._written, self._clock.monotonic_ms())
        log.info(
            "active controller of epoch %d (metadata up to offset %d)",
            epoch,
            self._written.highest_offset,
        )
        loop = asyncio.get_running_loop()
        self._active_task = loop.create_task(
            self._while_active(epoch), name="strom-active-controller"
        )
        self._background = [
            loop.create_task(task(), name=name) for name, task in self._while_active_tasks
        ]

    def deactivate(self) -> None:
        """The leadership is gone: fail what waits and forget the written image."""
        if self._epoch is not None:
            log.info("no longer the active controller (epoch %d)", self._epoch)
        self._resign_now()

    def committed(self, offset: int) -> None:
        """The quorum committed every record up to ``offset`` (and the committed image has
        them): answer the operations they belong to."""
        while self._waiting and self._waiting[0].last_offset <= offset:
            waiting = self._waiting.pop(0)
            if not waiting.done.done():
                waiting.done.set_result(None)
        if not self._waiting and self._epoch is not None:
            # Everything written is committed: the two images are the same again.
            self._written = self._committed.image

    def _resign_now(self) -> None:
        self._epoch = None
        self._written = None
        waiting, self._waiting = self._waiting, []
        for item in waiting:
            if not item.done.done():
                item.done.set_exception(
                    CommitUnknownError(
                        f"node {self.node_id} stopped being the active controller before the "
                        f"records up to offset {item.last_offset} were committed"
                    )
                )
        task, self._active_task = self._active_task, None
        if task is not None:
            task.cancel()
        background, self._background = self._background, []
        for other in background:
            other.cancel()
        probes, self._probes = self._probes, {}
        for probe in probes.values():
            probe.cancel()

    async def stop(self) -> None:
        tasks = [t for t in (self._active_task, *self._background) if t is not None]
        self._resign_now()
        await asyncio.gather(*tasks, return_exceptions=True)

    # --- running operations -----------------------------------------------------------------

    async def run(self, name: str, operation: Callable[[MetadataImage], ControllerResult[T]]) -> T:
        """Validate ``operation`` against the written image, append its records and reply once
        they are committed. Raises :class:`NotControllerError` (:class:`CommitUnknownError`
        when the leadership went after the records were written)."""
        response, _ = await self._run(name, operation)
        return response

    async def _run(
        self, name: str, operation: Callable[[MetadataImage], ControllerResult[T]]
    ) -> tuple[T, int | None]:
        async with self._lock:
            epoch, written = self._epoch, self._written
            if epoch is None or written is None:
                raise NotControllerError(
                    self._failure or f"node {self.node_id} is not the active controller"
                )
            result = operation(written)
            if not result.records:
                return result.response, None
            try:
                last_offset = self._quorum.append(
                    [encode_record(record) for record in result.records], epoch=epoch
                )
            except NotLeaderError as error:
                self._resign_now()
                raise NotControllerError(str(error)) from None
            except Exception as error:
                # The metadata log's state is unknown after a failed write: as Kafka's
                # controller does, this node stops being a controller for good.
                self._failure = f"the metadata log failed during {name}: {error}"
                log.critical("%s; this node no longer acts as a controller", self._failure)
                self._resign_now()
                raise NotControllerError(self._failure) from error
            self._written = _advance(written, result.records, last_offset, epoch)
            done = asyncio.get_running_loop().create_future()
            self._waiting.append(_Waiting(last_offset, done))
        await done
        log.debug(
            "%s: committed %d record(s) up to offset %d", name, len(result.records), last_offset
        )
        return result.response, last_offset

    async def _while_active(self, epoch: int) -> None:
        """Bootstrap a new cluster (nothing when the log has its first records), then fence
        unfenced brokers whose sessions run out, as long as this node is active."""
        try:
            await self.run(
                "bootstrap",
                functools.partial(
                    self.controller.bootstrap,
                    metadata_version=self._bootstrap_version,
                    scram=self._bootstrap_scram,
                ),
            )
        except NotControllerError:
            log.info("bootstrap of epoch %d gave way to a newer controller", epoch)
            return
        next_balance = self._next_balance()
        while True:
            now = self._clock.monotonic_ms()
            image = self.image
            for broker_id, broker_epoch in self.sessions.expired(now, image):
                if self.sessions.connection_lost(broker_id):
                    log.warning(
                        "fencing broker %d: its heartbeat connection closed, its listeners "
                        "refuse connections and no heartbeat came within %d ms "
                        "(broker.heartbeat.connection.close.grace.ms)",
                        broker_id,
                        self.sessions.close_grace_ms,
                    )
                else:
                    log.warning(
                        "fencing broker %d: no heartbeat for %d ms (broker.session.timeout.ms)",
                        broker_id,
                        self.sessions.session_timeout_ms,
                    )
                try:
                    await self.run(
                        "fence broker",
                        partial(
                            self.controller.fence_broker,
                            broker_id=broker_id,
                            broker_epoch=broker_epoch,
                        ),
                    )
                except NotControllerError:
                    return
            if next_balance is not None and now >= next_balance:
                try:
                    moved = await self.run("balance leaders", self.controller.balance_leaders)
                except NotControllerError:
                    return
                if moved:
                    log.info("gave %d partition(s) back to their preferred leader", moved)
                next_balance = self._next_balance()
            deadline = self.sessions.next_expiry_ms(self.image)
            if next_balance is not None:
                deadline = next_balance if deadline is None else min(deadline, next_balance)
            wait_ms = 1000 if deadline is None else max(deadline - self._clock.monotonic_ms(), 1)
            self._sessions_changed.clear()
            await wait_event(self._sessions_changed, wait_ms / 1000)

    def _next_balance(self) -> int | None:
        if self._balance_interval_ms is None:
            return None
        return self._clock.monotonic_ms() + self._balance_interval_ms

    # --- the operations, by name ------------------------------------------------------------

    async def register_broker(self, request: BrokerRegistrationRequest) -> BrokerRegistrationReply:
        alive = self.sessions.is_alive(request.broker_id, self._clock.monotonic_ms())
        reply, offset = await self._run(
            "register broker",
            lambda image: self.controller.register_broker(image, request, alive=alive),
        )
        if not reply.error.is_failure and offset is not None:
            self.sessions.registered(
                request.broker_id,
                epoch=reply.broker_epoch,
                registration_offset=offset,
                now_ms=self._clock.monotonic_ms(),
            )
            self._sessions_changed.set()
            log.info(
                "broker %d registered (broker epoch %d)", request.broker_id, reply.broker_epoch
            )
        return reply

    async def broker_heartbeat(
        self,
        *,
        broker_id: int,
        broker_epoch: int,
        metadata_offset: int,
        want_fence: bool,
        want_shut_down: bool,
        connection: str | None = None,
        loads: tuple[ReplicaLoad, ...] = (),
    ) -> BrokerHeartbeatReply:
        """``connection``: the id of the connection it came on (None: not a network one);
        ``loads``: the broker's new load sample for the balancer (none: unchanged)."""
        caught_up = self.sessions.heartbeat(
            broker_id,
            epoch=broker_epoch,
            metadata_offset=metadata_offset,
            now_ms=self._clock.monotonic_ms(),
            connection=connection,
        )
        beat = BrokerHeartbeat(
            broker_id=broker_id,
            broker_epoch=broker_epoch,
            want_fence=want_fence,
            want_shut_down=want_shut_down,
            caught_up=caught_up,
        )
        reply = await self.run(
            "broker heartbeat", lambda image: self.controller.broker_heartbeat(image, beat)
        )
        if loads and not reply.error.is_failure:
            self.loads.report(broker_id, loads)
        self._sessions_changed.set()
        return reply

    def heartbeat_connection_closed(self, connection: str) -> None:
        """A connection brokers heartbeated on closed: try their listeners, and fence those
        whose listeners refuse connections after the grace unless they heartbeat again (see
        ``BrokerSessions``)."""
        if not self.is_active:
            return
        for broker_id in self.sessions.connection_closed(connection, self._clock.monotonic_ms()):
            log.info(
                "the heartbeat connection of broker %d closed; trying its listeners", broker_id
            )
            self._sessions_changed.set()
            if broker_id not in self._probes:
                self._probes[broker_id] = asyncio.get_running_loop().create_task(
                    self._probe(broker_id), name=f"strom-probe-broker-{broker_id}"
                )

    async def _probe(self, broker_id: int) -> None:
        """Try the broker's listeners until it heartbeats again, is found dead or is fenced: a
        listener that accepted once may belong to a process about to exit, so an answer does
        not end the trying. The first tries are a grace apart (at least 50 ms), later ones up
        to a second (a stopped broker's listener queues each connection until it resumes)."""
        interval_s = max(self.sessions.close_grace_ms or 0, 50) / 1000
        try:
            while self.sessions.connection_lost(broker_id):
                broker = self.image.cluster.broker(broker_id)
                if broker is None or broker.fenced:
                    return
                result = await probe_listeners(broker.endpoints, max(interval_s, 1.0))
                if not self.sessions.connection_lost(broker_id):
                    return
                if result is ListenerProbe.REFUSED:
                    log.info("broker %d: its listeners refuse connections", broker_id)
                    self.sessions.listeners_refused(broker_id, self._clock.monotonic_ms())
                    self._sessions_changed.set()
                    return
                if result is ListenerProbe.ACCEPTED:
                    self.sessions.listeners_answered(broker_id)
                await asyncio.sleep(interval_s)
                interval_s = min(interval_s * 2, max(interval_s, 1.0))
        finally:
            if self._probes.get(broker_id) is asyncio.current_task():
                del self._probes[broker_id]

    async def create_topics(self, request: CreateTopicsRequest) -> list[CreateTopicResult]:
        return await self.run(
            "create topics", lambda image: self.controller.create_topics(image, request)
        )

    async def delete_topics(self, request: DeleteTopicsRequest) -> list[DeleteTopicResult]:
        return await self.run(
            "delete topics", lambda image: self.controller.delete_topics(image, request)
        )

    async def create_partitions(
        self, request: CreatePartitionsRequest
    ) -> list[CreatePartitionsResult]:
        return await self.run(
            "create partitions", lambda image: self.controller.create_partitions(image, request)
        )

    async def alter_partition(self, request: AlterPartitionRequest) -> AlterPartitionReply:
        return await self.run(
            "alter partition", lambda image: self.controller.alter_partition(image, request)
        )

    async def elect_leaders(self, request: ElectLeadersRequest) -> list[ElectionResult]:
        return await self.run(
            "elect leaders", lambda image: self.controller.elect_leaders(image, request)
        )

    async def update_features(
        self, updates: Sequence[FeatureUpdate], *, validate_only: bool
    ) -> ApiError:
        return await self.run(
            "update features",
            lambda image: self.controller.update_features(
                image, updates, validate_only=validate_only
            ),
        )

    async def alter_reassignments(
        self, requests: Sequence[ReassignmentRequest]
    ) -> list[ReassignmentResult]:
        return await self.run(
            "alter reassignments",
            lambda image: self.controller.alter_reassignments(image, requests),
        )

    async def list_reassignments(
        self, partitions: Sequence[TopicPartition] | None
    ) -> list[tuple[TopicPartition, PartitionRegistration]]:
        return await self.run(
            "list reassignments",
            lambda image: ControllerResult(
                [], self.controller.list_reassignments(image, partitions)
            ),
        )

    async def alter_configs(self, request: AlterConfigsRequest) -> list[AlterConfigsResult]:
        return await self.run(
            "alter configs", lambda image: self.controller.alter_configs(image, request)
        )

    async def incremental_alter_configs(
        self, request: IncrementalAlterConfigsRequest
    ) -> list[AlterConfigsResult]:
        return await self.run(
            "incremental alter configs",
            lambda image: self.controller.incremental_alter_configs(image, request),
        )

    async def unregister_broker(self, broker_id: int) -> ApiError:
        return await self.run(
            "unregister broker", lambda image: self.controller.unregister_broker(image, broker_id)
        )

    async def allocate_producer_ids(self, *, broker_id: int, broker_epoch: int) -> ProducerIdsBlock:
        return await self.run(
            "allocate producer ids",
            lambda image: self.controller.allocate_producer_ids(
                image, broker_id=broker_id, broker_epoch=broker_epoch
            ),
        )


def _advance(
    image: MetadataImage, records: Sequence[MetadataRecord], last_offset: int, epoch: int
) -> MetadataImage:
    """``image`` with ``records`` (ending at ``last_offset``) applied."""
    delta = MetadataDelta(image)
    for record in records:
        delta.replay(record)
    return delta.apply(MetadataProvenance(offset=last_offset, epoch=epoch))
