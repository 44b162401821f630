"""Fetch (v4+): record batches from the segment files, sent with sendfile.

This handler decodes the request, resolves its fetch session, asks the replica manager for the
records and encodes the answer (Kafka's ``KafkaApis.handleFetchRequest``):

1. **Session** (``fetch_session``): the request's partitions (by name, or by topic id from v13)
   and its session id and epoch give a ``FetchContext``: which partitions to read, in which
   order.
2. **Read and long poll** (``ReplicaManager.fetch_messages``, Kafka's ``fetchMessages``): each
   partition up to its ``partition_max_bytes`` and the request's ``max_bytes`` in total, the
   first batch whole (KIP-74); consumers read up to the high watermark (read_uncommitted) or
   the last stable offset (read_committed); with fewer than ``min_bytes`` readable, no error
   and ``max_wait`` > 0, the fetch waits in the replica manager's purgatory (a
   ``DelayedFetch``) and reads again. A topic id the metadata does not know answers
   UNKNOWN_TOPIC_ID.
3. **Quotas** (a consumer's): the time spent on the request so far counts under its
   ``request_percentage``, the bytes read under its ``consumer_byte_rate``; when either
   throttles, the answer is empty (no partitions, the bytes taken back from the byte rate)
   with the larger throttle time, as Kafka's (``FetchContext.getThrottledResponse``).
   Followers are exempt from both.
4. **Answer**: the context picks the partitions to send (all, or for an incremental session
   those that changed); each partition's records are file regions of the segments
   (``Response`` parts). The usual answer is packed with ``struct`` (``pack_fetch_response``);
   one with a diverging epoch or leader hints is written by kio (``RecordsSplicer``).

read_committed answers, per partition, the last stable offset and the aborted transactions
overlapping the records sent (producer id, first offset; clients drop those producers' records
from the first offset to the ABORT marker); read_uncommitted answers null there, as Kafka.

A request with a replica id (``replica_id`` before v15, ``replica_state`` from v15) is a
**follower's fetch** (``FetchParams.replica_id``): the replica manager reads it up to the log
end offset, answers a ``diverging_epoch`` when the follower's log left the leader's (KIP-320),
records the follower's position (which may move the high watermark and the ISR), and
long-polls it on appends rather than on the high watermark (the follower fetch purgatory).

With an authorizer, a consumer's partitions of topics it may not READ, and every partition of a
follower without CLUSTER_ACTION, answer TOPIC_AUTHORIZATION_FAILED unread.

From v16, a partition answered NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH names its current
leader and the answer that leader's endpoint (KIP-951, ``leader_hints``); Produce does the same.

Differences from Kafka: no preferred read replica (always -1).
"""

from __future__ import annotations

import datetime
import logging
import uuid
from typing import Any, Final, Protocol

from kio.static.primitive import i32, i64

from strom.common import Clock, ErrorCode, TopicPartition
from strom.metadata import MetadataImage
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.protocol.fetch_response import FetchedPartition, RecordsSplicer, pack_fetch_response
from strom.security.acls import AclOperation, ResourceType
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import build, response_module
from strom.server.api.response import Response
from strom.server.api.throttle import throttle_field
from strom.server.handlers.leader_hints import LeaderHints
from strom.server.quotas.client_quotas import ClientQuotaManager
from strom.server.replica.delayed_fetch import FetchPartitions
from strom.server.replica.fetch_session import (
    ContextKind,
    FetchContext,
    FetchSessionCache,
    PartitionFetch,
    PartitionOutcome,
    SessionPartition,
)
from strom.server.replica.replica_results import (
    READ_COMMITTED,
    READ_LOG_END,
    FetchParams,
    ReadResultInfo,
)
from strom.storage.file_region import FileRegion

__all__ = ["FetchHandler"]

log = logging.getLogger(__name__)

_TOPIC_IDS_VERSION: Final = 13
_SESSIONS_VERSION: Final = 7
_REPLICA_STATE_VERSION: Final = 15
_LEADER_HINTS_VERSION: Final = 16
"""Fetch v16+ answers carry KIP-951's leader hints."""
_HINTED: Final = frozenset({ErrorCode.not_leader_or_follower, ErrorCode.fenced_leader_epoch})

_Partitions = list[tuple[SessionPartition, PartitionFetch]]
_DENIED: Final = ReadResultInfo(error=ErrorCode.topic_authorization_failed)
_NO_TOPIC_ID: Final = uuid.UUID(int=0)


def _ms(value: datetime.timedelta) -> int:
    return int(value.total_seconds() * 1000)


def _aborted(schema: Any, read: ReadResultInfo, isolation_level: int) -> tuple[Any, ...] | None:
    """The partition's aborted transactions: null for read_uncommitted (as Kafka)."""
    if isolation_level != READ_COMMITTED:
        return None
    return tuple(
        build(
            schema.AbortedTransaction,
            producer_id=i64(txn.producer_id),
            first_offset=i64(txn.first_offset),
        )
        for txn in read.aborted_transactions or ()
    )


def _replica(body: Any, version: int) -> tuple[int, int]:
    """The fetching replica's broker id (-1 for a consumer) and broker epoch (-1 before v15)."""
    if version >= _REPLICA_STATE_VERSION:
        state = body.replica_state
        return int(state.replica_id), int(state.replica_epoch)
    return int(body.replica_id), -1


def _diverging_epoch(schema: Any, read: ReadResultInfo) -> Any:
    entity = getattr(schema, "EpochEndOffset", None)
    if entity is None or read.diverging_epoch is None:
        return None if entity is None else build(entity)
    epoch, end_offset = read.diverging_epoch
    return build(entity, epoch=i32(epoch), end_offset=i64(end_offset))


def _leader(
    schema: Any, hints: LeaderHints | None, key: SessionPartition, read: ReadResultInfo
) -> dict[str, Any]:
    """The partition's ``current_leader`` field when the answer has hints."""
    if hints is None:
        return {}
    tp = TopicPartition(key.topic, key.partition)
    return {"current_leader": hints.current_leader(schema, tp, read.error)}


class MessageFetcher(Protocol):
    """What Fetch needs of the replica manager."""

    @property
    def image(self) -> MetadataImage:
        """The metadata image the replica manager applied last."""
        ...

    async def fetch_messages(
        self, params: FetchParams, partitions: FetchPartitions
    ) -> list[ReadResultInfo]:
        """Each partition's read, at once or after a long poll (Kafka's ``fetchMessages``)."""
        ...


def _packed_topics(
    partitions: _Partitions,
    reads: list[ReadResultInfo],
    selected: list[int],
    *,
    by_ids: bool,
    committed: bool,
) -> list[tuple[str, uuid.UUID, list[FetchedPartition[FileRegion]]]]:
    """The selected partitions' answers grouped by topic, in order, as plain values; aborted
    transactions are null unless ``committed`` (read_committed), as in ``_aborted``."""
    topics: list[tuple[str, uuid.UUID, list[FetchedPartition[FileRegion]]]] = []
    last: SessionPartition | None = None
    for index in selected:
        key = partitions[index][0]
        read = reads[index]
        aborted = None
        if committed:
            aborted = [(t.producer_id, t.first_offset) for t in read.aborted_transactions or ()]
        answer = FetchedPartition(
            key.partition,
            read.error,
            read.high_watermark,
            read.last_stable_offset,
            read.log_start_offset,
            aborted,
            read.regions,
        )
        same_topic = last is not None and (
            last.topic_id == key.topic_id if by_ids else last.topic == key.topic
        )
        if same_topic:
            topics[-1][2].append(answer)
        else:
            topics.append((key.topic, key.topic_id or _NO_TOPIC_ID, [answer]))
        last = key
    return topics


class FetchHandler:
    """Answers Fetch with file regions (see the module doc)."""

    api_key: Final = ApiKey.FETCH
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.FETCH]

    def __init__(
        self,
        *,
        replica_manager: MessageFetcher,
        sessions: FetchSessionCache,
        clock: Clock,
        quota: ClientQuotaManager | None = None,
    ) -> None:
        """``quota``: the consumers' byte rate quotas (followers are not counted)."""
        self._replica_manager = replica_manager
        self._sessions = sessions
        self._clock = clock
        self._quota = quota

    async def handle(self, context: RequestContext) -> Response:
        body: Any = context.body
        version = context.api_version
        fetch_context = self._new_context(body, version)
        partitions = fetch_context.partitions()
        replica_id, replica_epoch = _replica(body, version)
        quota = self._quota if replica_id < 0 else None
        if quota is not None and not quota.enabled:
            quota = None
        max_bytes = int(body.max_bytes)
        if quota is not None:  # at most what the quota window holds (Kafka's cap)
            most = quota.max_value_in_window(context.user, context.client_id)
            max_bytes = max_bytes if most is None else min(max_bytes, max(int(most), 1))
        params = FetchParams(
            replica_id=replica_id,
            replica_epoch=replica_epoch,
            max_wait_ms=_ms(body.max_wait),
            min_bytes=int(body.min_bytes),
            max_bytes=max_bytes,
            isolation_level=READ_LOG_END if replica_id >= 0 else int(body.isolation_level),
        )
        if context.authorizer is None:
            reads = await self._replica_manager.fetch_messages(params, partitions)
        else:
            reads = await self._authorized_reads(context, params, partitions)
        throttle_ms = 0 if replica_id >= 0 else self._throttle(context, quota, reads)
        try:
            return self._respond(
                context=context,
                version=version,
                fetch_context=fetch_context,
                partitions=partitions,
                reads=reads,
                isolation_level=params.isolation_level,
                throttle_ms=throttle_ms,
            )
        except BaseException:
            for read in reads:
                read.close()
            raise

    @staticmethod
    def _throttle(
        context: RequestContext, quota: ClientQuotaManager | None, reads: list[ReadResultInfo]
    ) -> int:
        """A consumer's throttle: the larger of its request quota's and its byte rate's (each
        mutes the connection for its own). When throttled, the answer will be empty, so its
        bytes are taken back from the byte rate (Kafka's ``unrecordQuotaSensor``)."""
        request_ms = context.request_throttle()
        if quota is None:
            return request_ms
        size = sum(read.size for read in reads)
        bandwidth_ms = quota.record(context.user, context.client_id, size)
        if request_ms or bandwidth_ms:
            quota.unrecord(context.user, context.client_id, size)
            context.throttle(bandwidth_ms)
        return max(request_ms, bandwidth_ms)

    async def _authorized_reads(
        self, context: RequestContext, params: FetchParams, partitions: _Partitions
    ) -> list[ReadResultInfo]:
        """Kafka's fetch authorization: a follower needs CLUSTER_ACTION on the cluster, a
        consumer READ on each topic; the others answer TOPIC_AUTHORIZATION_FAILED unread."""
        if params.replica_id >= 0:
            follower = context.authorize(AclOperation.CLUSTER_ACTION)
            allowed = {key.topic: follower for key, _ in partitions}
        else:
            allowed = {
                key.topic: context.authorize(AclOperation.READ, ResourceType.TOPIC, key.topic)
                for key, _ in partitions
            }
        readable = [entry for entry in partitions if allowed[entry[0].topic]]
        reads = iter(await self._replica_manager.fetch_messages(params, readable))
        return [next(reads) if allowed[key.topic] else _DENIED for key, _ in partitions]

    def _new_context(self, body: Any, version: int) -> FetchContext:
        uses_topic_ids = version >= _TOPIC_IDS_VERSION
        image = self._replica_manager.image
        names: dict[uuid.UUID, str] = {}

        def key_of(topic: Any, partition: int) -> SessionPartition:
            if not uses_topic_ids:
                return SessionPartition(str(topic.topic), partition)
            topic_id: uuid.UUID = topic.topic_id
            name = names.get(topic_id)
            if name is None:
                found = image.topics.get_topic_by_id(topic_id)
                name = names[topic_id] = "" if found is None else found.name
            return SessionPartition(name, partition, topic_id)

        fetch_data: _Partitions = []
        for topic in body.topics:
            for partition in topic.partitions:
                request = PartitionFetch(
                    fetch_offset=int(partition.fetch_offset),
                    partition_max_bytes=int(partition.partition_max_bytes),
                    current_leader_epoch=int(getattr(partition, "current_leader_epoch", -1)),
                    log_start_offset=int(getattr(partition, "log_start_offset", -1)),
                    last_fetched_epoch=int(getattr(partition, "last_fetched_epoch", -1)),
                )
                fetch_data.append((key_of(topic, int(partition.partition)), request))
        if version < _SESSIONS_VERSION:
            session_id, epoch, forgotten = 0, -1, []
        else:
            session_id, epoch = int(body.session_id), int(body.session_epoch)
            forgotten = [
                key_of(topic, int(partition))
                for topic in body.forgotten_topics_data
                for partition in topic.partitions
            ]
        fetch_context = self._sessions.new_context(
            session_id=session_id,
            epoch=epoch,
            fetch_data=fetch_data,
            forgotten=forgotten,
            uses_topic_ids=uses_topic_ids,
            now_ms=self._clock.monotonic_ms(),
        )
        if fetch_context.kind is ContextKind.SESSION_ERROR:
            log.info("fetch session %d (epoch %d): %s", session_id, epoch, fetch_context.error.name)
        return fetch_context

    def _respond(
        self,
        *,
        context: RequestContext,
        version: int,
        fetch_context: FetchContext,
        partitions: _Partitions,
        reads: list[ReadResultInfo],
        isolation_level: int,
        throttle_ms: int,
    ) -> Response:
        if throttle_ms:
            error, session_id = fetch_context.throttled()
            selected: list[int] = []
        else:
            outcomes = [
                (
                    key,
                    PartitionOutcome(
                        records_size=read.size,
                        high_watermark=read.high_watermark,
                        log_start_offset=read.log_start_offset,
                        error_code=read.error,
                    ),
                )
                for (key, _), read in zip(partitions, reads, strict=True)
            ]
            error, session_id, selected = fetch_context.respond(
                outcomes, now_ms=self._clock.monotonic_ms()
            )
        chosen = set(selected)
        for index, read in enumerate(reads):
            if index not in chosen:
                read.close()
        hinted = version >= _LEADER_HINTS_VERSION and any(
            reads[i].error in _HINTED for i in selected
        )
        if not hinted and all(reads[i].diverging_epoch is None for i in selected):
            packed = pack_fetch_response(
                version=version,
                correlation_id=context.request.correlation_id,
                throttle_ms=throttle_ms,
                error_code=error,
                session_id=session_id,
                topics=_packed_topics(
                    partitions,
                    reads,
                    selected,
                    by_ids=version >= _TOPIC_IDS_VERSION,
                    committed=isolation_level == READ_COMMITTED,
                ),
            )
            if packed is not None:
                return Response.from_parts(packed)
        schema = response_module(ApiKey.FETCH, version)
        hints = None
        if hinted:
            hints = LeaderHints(self._replica_manager.image, context.listener_name, _HINTED)
        splicer: RecordsSplicer[FileRegion] = RecordsSplicer()
        by_ids = version >= _TOPIC_IDS_VERSION
        topics: list[tuple[SessionPartition, list[Any]]] = []
        for index in selected:
            key = partitions[index][0]
            read = reads[index]
            entry = build(
                schema.PartitionData,
                partition_index=i32(key.partition),
                error_code=read.error,
                high_watermark=i64(read.high_watermark),
                last_stable_offset=i64(read.last_stable_offset),
                log_start_offset=i64(read.log_start_offset),
                aborted_transactions=_aborted(schema, read, isolation_level),
                diverging_epoch=_diverging_epoch(schema, read),
                preferred_read_replica=i32(-1),
                records=splicer.placeholder(read.regions),
                **_leader(schema, hints, key, read),
            )
            same_topic = topics and (
                topics[-1][0].topic_id == key.topic_id
                if by_ids
                else topics[-1][0].topic == key.topic
            )
            if same_topic:
                topics[-1][1].append(entry)
            else:
                topics.append((key, [entry]))
        body = build(
            schema.FetchResponse,
            throttle_time=throttle_field(throttle_ms),
            error_code=error,
            session_id=i32(session_id),
            responses=tuple(
                build(
                    schema.FetchableTopicResponse,
                    topic=key.topic,
                    topic_id=key.topic_id,
                    partitions=tuple(entries),
                )
                for key, entries in topics
            ),
            node_endpoints=() if hints is None else hints.node_endpoints(schema),
        )
        parts = splicer.encode(correlation_id=context.request.correlation_id, body=body)
        return Response.from_parts(parts)
