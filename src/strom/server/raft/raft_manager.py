"""The asyncio shell around the quorum's sans-I/O core (Kafka's ``KafkaRaftManager``).

``strom.raft.RaftClient`` decides everything; this module only feeds it:

* **time**: one task polls the client whenever the deadline it returned passes, or sooner when
  something arrives (a request, a response, an append, a finished flush);
* **the network**: requests the client sends go out on :class:`NodeClients` connections to the
  voters' controller listeners (timeouts are the client's own business: a lost answer is
  reported as ``None``); requests other nodes send arrive through :class:`RaftApiHandler` on the
  controller listener and are answered when the client responds, at once or after a long poll;
* **the disk**: after each poll, whatever the log holds beyond its flushed offset is fsynced in a
  worker thread (the event loop keeps serving), and the client is polled again; the
  ``quorum-state`` file is written on ``state_writer`` (:mod:`strom.server.raft.raft_disk`), and
  every
  request and answer the client emits waits until the election state before it is durable;
* **the state machine above it**: committed batches are decoded and applied to the node's
  :class:`~strom.metadata.MetadataLoader` (the committed image), then the controller hears of
  the commit; leader changes activate or deactivate the controller; snapshots are loaded into the
  loader and written every ``metadata.log.max.record.bytes.between.snapshots`` bytes or
  ``metadata.log.max.snapshot.interval.ms``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from kio.static.protocol import ResponsePayload

from strom.client.async_client import ConnectionClosed, NodeClients, RequestFailed
from strom.common import Clock
from strom.common.waiting import wait_event
from strom.metadata import EncodedBatch, MetadataLoader, encode_record
from strom.protocol.api import ApiKey, VersionRange
from strom.raft import (
    CommittedBatch,
    InboundRequest,
    InboundResponse,
    LeaderAndEpoch,
    OutboundRequest,
    RaftClient,
    SnapshotReader,
)
from strom.security.acls import AclOperation
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import for_version
from strom.server.raft.raft_disk import DiskWriter

__all__ = ["COMMIT_LATENCY_SAMPLES", "RAFT_APIS", "RaftApiHandler", "RaftManager", "SnapshotPolicy"]

COMMIT_LATENCY_SAMPLES: Final = 128
"""The recent commit latencies kept for the ``raft-metrics`` average and maximum."""

log = logging.getLogger(__name__)

RAFT_APIS: Final[dict[ApiKey, VersionRange]] = {
    ApiKey.VOTE: VersionRange(0, 2),
    ApiKey.BEGIN_QUORUM_EPOCH: VersionRange(0, 0),
    ApiKey.END_QUORUM_EPOCH: VersionRange(0, 0),
    ApiKey.FETCH: VersionRange(12, 12),
    ApiKey.FETCH_SNAPSHOT: VersionRange(0, 0),
    ApiKey.DESCRIBE_QUORUM: VersionRange(0, 2),
    ApiKey.ADD_RAFT_VOTER: VersionRange(0, 0),
    ApiKey.REMOVE_RAFT_VOTER: VersionRange(0, 0),
    ApiKey.UPDATE_RAFT_VOTER: VersionRange(0, 0),
}
"""The APIs the quorum answers on the controller listener, at the versions its core speaks
(DescribeQuorum's and Vote's answers are converted to the version asked: a pre-vote is Vote
v2)."""

RAFT_API_OPERATIONS: Final[dict[ApiKey, AclOperation]] = {
    ApiKey.DESCRIBE_QUORUM: AclOperation.DESCRIBE,
    ApiKey.ADD_RAFT_VOTER: AclOperation.ALTER,
    ApiKey.REMOVE_RAFT_VOTER: AclOperation.ALTER,
}
"""The CLUSTER operation each quorum API needs where it is not CLUSTER_ACTION (Kafka's)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SnapshotPolicy:
    """When to write a snapshot of the committed image (Kafka's ``metadata.log.*``)."""

    max_bytes_between: int
    max_interval_ms: int
    """0: never by time."""


class ActiveControllerListener(Protocol):
    """What the controller role needs to hear from the quorum (``ControllerServer``)."""

    def activate(self, epoch: int) -> None: ...

    def deactivate(self) -> None: ...

    def committed(self, offset: int) -> None: ...


class RaftManager:
    """Drives one node's :class:`RaftClient` (see the module doc)."""

    def __init__(
        self,
        *,
        node_id: int,
        make_client: Callable[[RaftManager], RaftClient],
        clients: NodeClients,
        loader: MetadataLoader,
        clock: Clock,
        snapshots: SnapshotPolicy,
        on_response: Callable[[int, Any], None] | None = None,
        state_writer: DiskWriter | None = None,
        writers: Sequence[DiskWriter] = (),
    ) -> None:
        """``make_client(self)``: the core, built with this manager as its ``Channel``;
        ``on_response(node, body)``: sees every answer (where the quorum's nodes are);
        ``state_writer``: writes the client's election state (what it sends waits for it);
        ``writers``: every writer of the quorum's files, closed (their writes done) by stop."""
        self.node_id = node_id
        self._clients = clients
        self._loader = loader
        self._clock = clock
        self._snapshots = snapshots
        self._on_response = on_response
        self._state_writer = state_writer
        self._writers = writers
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._sends: set[asyncio.Task[None]] = set()
        self._controller: ActiveControllerListener | None = None
        self.committed_offset = -1
        self._appended: deque[tuple[int, float]] = deque()
        """The controller's batches appended as leader and not yet committed: (last offset,
        when)."""
        self.commit_latencies: deque[float] = deque(maxlen=COMMIT_LATENCY_SAMPLES)
        """Milliseconds from appending each recent batch as leader to its commit (Kafka's
        ``commit-latency``)."""
        """The last offset delivered by ``handle_commit`` (data or control)."""
        self._caught_up = asyncio.Event()
        self._catch_up_target: int | None = None
        self._bytes_since_snapshot = 0
        self._last_snapshot_ms = clock.monotonic_ms()
        self.client = make_client(self)
        self.client.register(self)

    # --- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name="strom-raft")

    def attach_controller(self, controller: ActiveControllerListener) -> None:
        self._controller = controller

    async def wait_caught_up(self, timeout: float) -> None:
        """Until every record committed when this node first learnt the high watermark is in
        the loader's image (TimeoutError after ``timeout``)."""
        async with asyncio.timeout(timeout):
            await self._caught_up.wait()

    async def stop(self, *, timeout: float = 1.0) -> None:
        """Resign gracefully (a leader tells the others), then stop polling; the quorum's
        files are written when it returns."""
        if self._task is None:
            for writer in self._writers:
                await writer.close()
            return
        self.client.begin_shutdown()
        self._wake.set()
        await asyncio.sleep(0)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._drain_sends()
        task, self._task = self._task, None
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        for send in list(self._sends):
            send.cancel()
        await self._clients.close()
        for writer in self._writers:
            await writer.close()

    async def _drain_sends(self) -> None:
        while self._sends:
            await asyncio.gather(*self._sends, return_exceptions=True)

    # --- the poll loop ------------------------------------------------------------------------

    async def _run(self) -> None:
        raft_log = self.client.log
        while True:
            self._wake.clear()
            try:
                delay_ms = self.client.poll()
            except Exception:
                log.exception("the quorum's poll failed")
                delay_ms = 100
            if raft_log.end_offset > raft_log.flushed_end_offset:
                job = raft_log.begin_flush()
                await asyncio.to_thread(job.run)
                job.done()
                continue
            await wait_event(self._wake, max(delay_ms, 0) / 1000)

    def append(self, records: Sequence[bytes], *, epoch: int) -> int:
        """The controller's batch (``QuorumLog``): its last offset."""
        offset = self.client.append(records, epoch=epoch)
        self._appended.append((offset, time.monotonic()))
        self._wake.set()
        return offset

    # --- Channel (what the core sends) --------------------------------------------------------

    def send(self, request: OutboundRequest) -> None:
        self._once_state_written(lambda: self._start_send(request))

    def _once_state_written(self, action: Callable[[], None]) -> None:
        """Raft's rule: nothing leaves before the election state it was decided in is durable."""
        if self._state_writer is None:
            action()
        else:
            self._state_writer.when_written(action)

    def _start_send(self, request: OutboundRequest) -> None:
        task = asyncio.get_running_loop().create_task(self._send(request))
        self._sends.add(task)
        task.add_done_callback(self._sends.discard)

    async def _send(self, request: OutboundRequest) -> None:
        try:
            body = await self._clients.request(request.destination, request.body)
        except RequestFailed as error:
            log.debug("quorum request to node %d failed: %s", request.destination, error)
            body = None
            if isinstance(error, ConnectionClosed):
                self.client.connection_closed(request.destination)
        if self._on_response is not None:
            self._on_response(request.destination, body)
        self.client.handle_response(
            InboundResponse(source=request.destination, request=request.body, body=body)
        )
        self._wake.set()

    def respond(self, ref: object, body: ResponsePayload) -> None:
        assert isinstance(ref, asyncio.Future)
        future = ref

        def answer() -> None:
            if not future.done():
                future.set_result(body)

        self._once_state_written(answer)

    # --- inbound requests ---------------------------------------------------------------------

    async def handle(self, context: RequestContext) -> ResponsePayload:
        answer: asyncio.Future[ResponsePayload] = asyncio.get_running_loop().create_future()
        self.client.handle_request(InboundRequest(ref=answer, source=None, body=context.kio_body))
        self._wake.set()
        response = await answer
        if response.__version__ != context.api_version:
            return for_version(response, context.api_version)
        return response

    # --- RaftListener (what the core tells) ---------------------------------------------------

    def handle_commit(self, batch: CommittedBatch) -> None:
        if batch.records and not batch.is_control:
            decoded = EncodedBatch(
                base_offset=batch.base_offset, records=batch.records, epoch=batch.epoch
            ).decode()
            try:
                self._loader.apply_batch(decoded)
            except ExceptionGroup as group:
                # The image has advanced; only side effects (log directories) failed.
                for error in group.exceptions:
                    log.error(
                        "applying metadata at offset %d failed: %s",
                        batch.last_offset,
                        error,
                        exc_info=error,
                    )
            self._bytes_since_snapshot += sum(len(record) for record in batch.records)
        self.committed_offset = batch.last_offset
        appended, now = self._appended, time.monotonic()
        while appended and appended[0][0] <= batch.last_offset:
            self.commit_latencies.append((now - appended.popleft()[1]) * 1000)
        self._note_progress()
        if self._controller is not None:
            self._controller.committed(batch.last_offset)
        self._maybe_snapshot(batch)

    def handle_load_snapshot(self, snapshot: SnapshotReader) -> None:
        self._loader.load_snapshot(snapshot.records(), offset=snapshot.offset, epoch=snapshot.epoch)
        self.committed_offset = max(self.committed_offset, snapshot.offset - 1)
        self._bytes_since_snapshot = 0
        self._note_progress()
        log.info(
            "loaded the metadata snapshot at offset %d (epoch %d)", snapshot.offset, snapshot.epoch
        )

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        log.info(
            "the quorum's leader is %s in epoch %d",
            "unknown" if leader.leader_id is None else f"node {leader.leader_id}",
            leader.epoch,
        )
        self._appended.clear()  # a former leader's uncommitted batches may be truncated
        if self._controller is None:
            return
        if leader.leader_id == self.node_id:
            self._controller.activate(leader.epoch)
        else:
            self._controller.deactivate()

    def _note_progress(self) -> None:
        if self._caught_up.is_set():
            return
        high_watermark = self.client.high_watermark
        if self._catch_up_target is None and high_watermark is not None:
            self._catch_up_target = high_watermark - 1
        if self._catch_up_target is not None and self.committed_offset >= self._catch_up_target:
            self._caught_up.set()

    def _maybe_snapshot(self, batch: CommittedBatch) -> None:
        now = self._clock.monotonic_ms()
        policy = self._snapshots
        due_by_time = (
            policy.max_interval_ms > 0
            and self._bytes_since_snapshot > 0
            and now - self._last_snapshot_ms >= policy.max_interval_ms
        )
        if self._bytes_since_snapshot < policy.max_bytes_between and not due_by_time:
            return
        image = self._loader.image
        writer = self.client.create_snapshot(batch.last_offset + 1, batch.epoch)
        if writer is None:
            return
        writer.append([encode_record(record) for record in image.records()])
        writer.freeze()
        self._bytes_since_snapshot = 0
        self._last_snapshot_ms = now
        log.info("wrote a metadata snapshot at offset %d", batch.last_offset + 1)


class RaftApiHandler:
    """One quorum API on the controller listener, answered by the :class:`RaftManager`."""

    def __init__(self, api_key: ApiKey, manager: RaftManager) -> None:
        self.api_key: Final = api_key
        self.versions: Final = RAFT_APIS[api_key]
        self._manager = manager

    async def handle(self, context: RequestContext) -> ResponsePayload:
        return await self._manager.handle(context)
