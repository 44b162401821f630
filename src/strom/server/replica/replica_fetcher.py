"""Followers fetching from their leaders (Kafka's ``ReplicaFetcherManager`` and
``ReplicaFetcherThread``, as asyncio tasks).

:class:`ReplicaFetcherManager` keeps one :class:`ReplicaFetcher` per leader broker, and moves
partitions between them as :meth:`ReplicaManager.apply_metadata` says (``LeadershipChanges``).
A fetcher loops over one request at a time, on its own: nothing else waits for it, so a leader
that does not answer delays only the partitions fetched from it, and a fetcher left with no
partition (they moved to other leaders) is cancelled at once, its fetch in flight with it.
Each fetch is a Fetch (v15: topic ids, this broker's id and the
broker epoch it is registered in, KIP-903; no session) of every partition it follows from that
leader and is not backing off, each from its log's state:

* fetch offset: the log end offset; last fetched epoch: the log's latest leader epoch; the
  current leader epoch of the partition's registration (the leader fences stale ones);
* the leader answers at once if it has data, else after ``replica.fetch.wait.max.ms``.

For each partition in the answer, if the partition is still followed from this leader in that
epoch and its log did not move meanwhile:

* records: whole batches appended with ``append_as_follower`` (offsets, epochs, producer state,
  transaction index and markers as the leader has them), then the leader's high watermark (at
  most the local log end) and log start offset are taken;
* a diverging epoch: the log is truncated where KIP-279 says, and fetched again from there;
* OFFSET_OUT_OF_RANGE: the leader's log start and end (ListOffsets as a replica) say whether to
  cut the log to the leader's end or start over at its log start;
* a replica outside the ISR that ``follower.replication.throttled.replicas`` names is left out
  of the fetch while ``follower.replication.throttled.rate`` is exceeded
  (:mod:`strom.server.replica.replication_quota`);
* any other error (a leadership change on its way, a connection lost): the partition backs off
  ``replica.fetch.backoff.ms`` and the metadata soon says where to fetch from.

Requests go through :class:`BrokerClients` (``NodeClients`` in a broker) and backoffs run on a
``Timer`` (the event loop's in a broker), so a simulation runs fetchers on virtual time.
"""

from __future__ import annotations

import asyncio
import datetime
import functools
import logging
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final, Protocol

from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i32, i64
from kio.static.protocol import RequestPayload

from strom.client.async_client import RequestFailed
from strom.common import Clock, ErrorCode, KafkaError, TopicPartition
from strom.common.timer import LoopTimer, Timer, Wakeup
from strom.config import ServerConfig
from strom.protocol.batch import whole_batches_size
from strom.protocol.fetch_request import (
    FollowerFetch,
    FollowerFetchPartition,
    FollowerFetchTopic,
    FollowerState,
)
from strom.server.replica.replica_manager import FollowTarget, LeadershipChanges, ReplicaManager
from strom.server.replica.replication_quota import ReplicationQuota
from strom.storage.leader_epoch_cache import EpochEndOffset

__all__ = ["BrokerClients", "FetcherSettings", "ReplicaFetcher", "ReplicaFetcherManager"]

log = logging.getLogger(__name__)

_EARLIEST: Final = -2
_LATEST: Final = -1


class BrokerClients(Protocol):
    """Requests to other brokers by id (``NodeClients``)."""

    async def request(
        self, node_id: int, body: RequestPayload, *, timeout: float | None = None
    ) -> Any:
        """The broker's answer; raises :class:`RequestFailed` when none comes."""
        ...

    async def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class FetcherSettings:
    """Kafka's ``replica.fetch.*`` settings, in milliseconds and bytes."""

    wait_max_ms: int = 500
    min_bytes: int = 1
    max_bytes: int = 1 << 20
    response_max_bytes: int = 10 << 20
    backoff_ms: int = 1000
    socket_timeout_ms: int = 30_000

    @classmethod
    def from_config(cls, config: ServerConfig) -> FetcherSettings:
        return cls(
            wait_max_ms=config.get_int("replica.fetch.wait.max.ms"),
            min_bytes=config.get_int("replica.fetch.min.bytes"),
            max_bytes=config.get_int("replica.fetch.max.bytes"),
            response_max_bytes=config.get_int("replica.fetch.response.max.bytes"),
            backoff_ms=config.get_int("replica.fetch.backoff.ms"),
            socket_timeout_ms=config.get_int("replica.socket.timeout.ms"),
        )


@dataclass(slots=True)
class _Followed:
    leader_epoch: int
    delayed_until_ms: int = 0


class ReplicaFetcher:
    """Fetches every partition this broker follows from one leader, in one task."""

    def __init__(
        self,
        leader_id: int,
        *,
        node_id: int,
        broker_epoch: Callable[[], int],
        replica_manager: ReplicaManager,
        clients: BrokerClients,
        settings: FetcherSettings,
        clock: Clock,
        quota: ReplicationQuota | None = None,
        timer: Timer | None = None,
    ) -> None:
        """``broker_epoch``: the epoch this broker is registered in now; ``quota``:
        ``follower.replication.throttled.rate`` on out-of-sync replicas; ``timer``: what
        backoffs run on (the event loop's by default)."""
        self.leader_id = leader_id
        self._quota = quota
        self._node_id = node_id
        self._broker_epoch = broker_epoch
        self._replica_manager = replica_manager
        self._clients = clients
        self._settings = settings
        self._clock = clock
        self.partitions: dict[TopicPartition, _Followed] = {}
        self._wake = Wakeup(timer or LoopTimer())
        self._task: asyncio.Task[None] | None = None
        self._last_failure = ""

    def add(self, tp: TopicPartition, leader_epoch: int) -> None:
        self.partitions[tp] = _Followed(leader_epoch)
        self._wake.wake()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name=f"strom-replica-fetcher-{self.leader_id}"
            )

    def remove(self, tp: TopicPartition) -> None:
        self.partitions.pop(tp, None)

    def abandon(self) -> asyncio.Task[None] | None:
        """Cancel the fetch loop without waiting for it (a fetch to a hung leader may not end
        for ``replica.socket.timeout.ms``); the cancelled task, if any."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
        return task

    async def stop(self) -> None:
        task = self.abandon()
        if task is not None:
            await asyncio.gather(task, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            now = self._clock.monotonic_ms()
            ready = {
                tp: followed
                for tp, followed in self.partitions.items()
                if followed.delayed_until_ms <= now
            }
            if not ready:
                await self._idle(now)
                continue
            try:
                await self._fetch_once(ready)
            except Exception:
                log.exception("fetching from broker %d failed", self.leader_id)
                self._delay(ready)

    async def _idle(self, now_ms: int) -> None:
        """Sleep until a partition is added or the first backoff ends."""
        delays = [f.delayed_until_ms - now_ms for f in self.partitions.values()]
        await self._wake.wait(max(min(delays), 1) if delays else None)

    def _delay(self, partitions: Iterable[TopicPartition]) -> None:
        until = self._clock.monotonic_ms() + self._settings.backoff_ms
        for tp in partitions:
            followed = self.partitions.get(tp)
            if followed is not None:
                followed.delayed_until_ms = until

    async def _fetch_once(self, ready: dict[TopicPartition, _Followed]) -> None:
        sent: dict[TopicPartition, tuple[int, int]] = {}
        topics: dict[uuid.UUID, list[FollowerFetchPartition]] = {}
        names: dict[uuid.UUID, str] = {}
        image = self._replica_manager.image
        settings = self._settings
        for tp, followed in ready.items():
            topic = image.topics.get_topic(tp.topic)
            try:
                partition = self._replica_manager.follower(tp, followed.leader_epoch)
            except KafkaError:
                continue  # the metadata moved it; the manager hears of that too
            if topic is None:
                continue  # deleted: the manager stops following it
            names[topic.topic_id] = tp.topic
            quota = self._quota
            if quota is not None and quota.holds_back(tp, in_sync=self._node_id in partition.isr):
                continue  # left out while over the quota
            partition_log = partition.log
            fetch_offset = partition_log.log_end_offset
            sent[tp] = (followed.leader_epoch, fetch_offset)
            topics.setdefault(topic.topic_id, []).append(
                FollowerFetchPartition(
                    partition=tp.partition,
                    current_leader_epoch=followed.leader_epoch,
                    fetch_offset=fetch_offset,
                    last_fetched_epoch=partition_log.leader_epochs.latest_epoch,
                    log_start_offset=partition_log.log_start_offset,
                    partition_max_bytes=settings.max_bytes,
                )
            )
        if not sent:
            self._delay(ready)
            return
        request = FollowerFetch(
            replica_state=FollowerState(self._node_id, self._broker_epoch()),
            max_wait=datetime.timedelta(milliseconds=settings.wait_max_ms),
            min_bytes=settings.min_bytes,
            max_bytes=settings.response_max_bytes,
            topics=tuple(
                FollowerFetchTopic(topic_id, tuple(partitions))
                for topic_id, partitions in topics.items()
            ),
        )
        timeout = (self._settings.socket_timeout_ms + self._settings.wait_max_ms) / 1000
        try:
            response = await self._clients.request(self.leader_id, request, timeout=timeout)
        except RequestFailed as error:
            self._failed(f"cannot fetch from broker {self.leader_id}: {error}")
            self._delay(sent)
            return
        if response.error_code != ErrorCode.none:
            self._failed(f"broker {self.leader_id} refused the fetch: {response.error_code.name}")
            self._delay(sent)
            return
        self._last_failure = ""
        for topic in response.responses:
            name = names.get(topic.topic_id)
            for answer in topic.partitions:
                if name is None:
                    continue
                tp = TopicPartition(name, int(answer.partition_index))
                if tp in sent:
                    await self._process(tp, *sent[tp], answer)

    def _failed(self, message: str) -> None:
        """Log a fetch failure once, not on every retry."""
        if message != self._last_failure:
            log.info("%s", message)
            self._last_failure = message

    async def _process(
        self, tp: TopicPartition, leader_epoch: int, fetch_offset: int, answer: Any
    ) -> None:
        followed = self.partitions.get(tp)
        if followed is None or followed.leader_epoch != leader_epoch:
            return  # moved to another leader or epoch while the fetch was out
        manager = self._replica_manager
        error = ErrorCode(answer.error_code)
        try:
            if manager.follower(tp, leader_epoch).log_end_offset != fetch_offset:
                return  # truncated meanwhile: fetch again from the new end
            if error == ErrorCode.none:
                diverging = answer.diverging_epoch
                if diverging is not None and int(diverging.epoch) >= 0:
                    manager.truncate_follower(
                        tp,
                        leader_epoch=leader_epoch,
                        diverging=EpochEndOffset(int(diverging.epoch), int(diverging.end_offset)),
                    )
                    return
                records = bytes(answer.records or b"")
                whole = records[: whole_batches_size(records)]
                if self._quota is not None:
                    self._quota.record(tp, len(whole))
                manager.append_as_follower(
                    tp,
                    whole,
                    leader_epoch=leader_epoch,
                    high_watermark=int(answer.high_watermark),
                    log_start_offset=int(answer.log_start_offset),
                )
            elif error == ErrorCode.offset_out_of_range:
                await self._reset(tp, leader_epoch)
            else:
                log.info("%s: broker %d answered %s; backing off", tp, self.leader_id, error.name)
                self._delay([tp])
        except KafkaError as failure:
            log.warning("%s: cannot take what broker %d sent: %s", tp, self.leader_id, failure)
            self._delay([tp])

    async def _reset(self, tp: TopicPartition, leader_epoch: int) -> None:
        """OFFSET_OUT_OF_RANGE: ask the leader for its log start and end, then cut or restart."""
        from kio.schema.list_offsets.v7.request import (  # noqa: PLC0415 - as _fetch_once's
            ListOffsetsPartition,
            ListOffsetsRequest,
            ListOffsetsTopic,
        )

        offsets: dict[int, int] = {}
        for timestamp in (_EARLIEST, _LATEST):
            request = ListOffsetsRequest(
                replica_id=BrokerId(self._node_id),
                isolation_level=i8(0),
                topics=(
                    ListOffsetsTopic(
                        name=TopicName(tp.topic),
                        partitions=(
                            ListOffsetsPartition(
                                partition_index=i32(tp.partition),
                                current_leader_epoch=i32(leader_epoch),
                                timestamp=i64(timestamp),
                            ),
                        ),
                    ),
                ),
            )
            try:
                response = await self._clients.request(self.leader_id, request)
            except RequestFailed as error:
                self._failed(f"cannot list the offsets of {tp} on broker {self.leader_id}: {error}")
                self._delay([tp])
                return
            answer = response.topics[0].partitions[0]
            if answer.error_code != ErrorCode.none:
                self._delay([tp])
                return
            offsets[timestamp] = int(answer.offset)
        if self.partitions.get(tp) is not None:
            self._replica_manager.reset_follower(
                tp,
                leader_epoch=leader_epoch,
                leader_start=offsets[_EARLIEST],
                leader_end=offsets[_LATEST],
            )


class ReplicaFetcherManager:
    """One :class:`ReplicaFetcher` per leader this broker follows partitions from."""

    def __init__(
        self,
        *,
        node_id: int,
        broker_epoch: Callable[[], int],
        replica_manager: ReplicaManager,
        clients: BrokerClients,
        settings: FetcherSettings,
        clock: Clock,
        quota: ReplicationQuota | None = None,
        timer: Timer | None = None,
    ) -> None:
        self._new_fetcher = functools.partial(
            ReplicaFetcher,
            node_id=node_id,
            broker_epoch=broker_epoch,
            replica_manager=replica_manager,
            clients=clients,
            settings=settings,
            clock=clock,
            quota=quota,
            timer=timer,
        )
        self._clients = clients
        self._fetchers: dict[int, ReplicaFetcher] = {}
        self._targets: dict[TopicPartition, FollowTarget] = {}
        self._stopped = False

    @property
    def targets(self) -> dict[TopicPartition, FollowTarget]:
        """What each followed partition is fetched from."""
        return dict(self._targets)

    def apply(self, changes: LeadershipChanges) -> None:
        """Start, move or stop fetching partitions as a metadata change says (nothing once
        stopped: the metadata goes on arriving while the broker shuts down)."""
        if self._stopped:
            return
        for tp in changes.stop:
            self._remove(tp)
        for tp, target in changes.follow.items():
            if self._targets.get(tp) == target:
                continue
            self._remove(tp)
            fetcher = self._fetchers.get(target.leader_id)
            if fetcher is None:
                fetcher = self._fetchers[target.leader_id] = self._new_fetcher(target.leader_id)
            fetcher.add(tp, target.leader_epoch)
            self._targets[tp] = target

    def _remove(self, tp: TopicPartition) -> None:
        """Stop fetching ``tp``; a fetcher left with nothing to fetch is abandoned at once,
        with the fetch it may have in flight (Kafka's ``shutdownIdleFetcherThreads``)."""
        target = self._targets.pop(tp, None)
        if target is not None:
            fetcher = self._fetchers.get(target.leader_id)
            if fetcher is not None:
                fetcher.remove(tp)
                if not fetcher.partitions:
                    del self._fetchers[target.leader_id]
                    fetcher.abandon()

    async def stop(self) -> None:
        self._stopped = True
        fetchers, self._fetchers = self._fetchers, {}
        self._targets.clear()
        for fetcher in fetchers.values():
            await fetcher.stop()
        await self._clients.close()
