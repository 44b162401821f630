"""Produce (v3+): decode the request, check its records, hand them to the replica manager
(``ReplicaManager.append_records``: the appends, and the acks=all wait), encode the answer.

The appends happen before this handler first awaits anything (``append_records`` appends
before it suspends), so the batches of requests pipelined on one connection land in request
order (``network/NOTES.md``).

* acks=0: no answer. A partition that fails makes the broker close the connection instead, as
  Kafka does, so that the producer notices (it refreshes metadata and reconnects).
* acks=1: answered once appended.
* acks=-1 (all): answered once each partition's high watermark passes its batch (the replica
  manager's ``DelayedProduce``; immediate on one node), or REQUEST_TIMED_OUT after the
  request's timeout, NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR shrank meanwhile.

Per partition, the request's records must be exactly one v2 batch (Kafka's
``ProduceRequest.validateRecords``: INVALID_RECORD otherwise; zstd needs v7+:
UNSUPPORTED_COMPRESSION_TYPE); the partition log validates the batch itself (CRC, lengths,
counts, size: CORRUPT_MESSAGE, INVALID_RECORD, MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE,
UNSUPPORTED_COMPRESSION_TYPE). A failing partition gets its error code and error message (v8+),
a log line naming the client, and the other partitions are appended as usual.

A request with a ``transactional_id`` is appended like any other: its batches are transactional
and open (or continue) the producer's transaction in each partition, which a COMMIT or ABORT
marker from the transaction coordinator ends (WriteTxnMarkers). When this broker is the
transaction coordinator, a transactional batch is first verified as Kafka does (KIP-890): a
partition the producer did not add to its ongoing transaction (AddPartitionsToTxn) answers
INVALID_TXN_STATE, a fenced epoch INVALID_PRODUCER_EPOCH, an unknown producer id
INVALID_PRODUCER_ID_MAPPING, a coordinator that is busy NOT_ENOUGH_REPLICAS (retriable).
Batches with a producer id pass the partition's producer state (duplicates answered with their
original offsets, sequences and epochs checked); keyless records on a compacted topic are
refused with INVALID_RECORD and, from v8, ``record_errors`` naming each of them
(``replica_manager``).

From v10, a partition answered NOT_LEADER_OR_FOLLOWER names its current leader and the answer
that leader's endpoint (KIP-951, ``leader_hints``), so the producer moves without a metadata
round trip.

Kafka lets only its own admin client (client id ``__admin_client``) write internal topics; the
coordinators write them through the replica manager directly.

With an authorizer, a partition whose topic the principal may not WRITE answers
TOPIC_AUTHORIZATION_FAILED, and every partition of a transactional request whose transactional
id it may not WRITE answers TRANSACTIONAL_ID_AUTHORIZATION_FAILED, unappended.

Quotas: the connection counts the request under ``producer_byte_rate`` as it reads it; the
time spent on it counts under ``request_percentage`` when the answer is built (not for acks=0,
which has none); the answer carries the larger throttle.
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable, Iterable
from typing import Any, Final, Protocol

from kio.static.primitive import i32, i64
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode, TopicPartition
from strom.metadata import MetadataImage
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.protocol.batch import (
    COMPRESSION_MASK,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    BatchHeader,
    Compression,
)
from strom.protocol.framing import BytesLike
from strom.protocol.headers import encode_response_header
from strom.protocol.produce_response import (
    PartitionAnswer,
    pack_produce_response,
    response_header_version,
)
from strom.security.acls import AclOperation, ResourceType
from strom.server.api.handler_table import (
    NO_RESPONSE,
    CloseConnection,
    HandlerResult,
    RequestContext,
)
from strom.server.api.kio_entities import build, response_module
from strom.server.api.response import Response
from strom.server.api.throttle import throttle_field
from strom.server.handlers.leader_hints import LeaderHints
from strom.server.replica.replica_results import AppendResult
from strom.storage.producer_state import AppendOrigin

__all__ = [
    "AcksZeroProduceError",
    "ProduceHandler",
    "build_response",
    "check_produce_records",
    "respond",
]

log = logging.getLogger(__name__)

ADMIN_CLIENT_ID: Final = "__admin_client"
_MAGIC_OFFSET: Final = 16
_ATTRIBUTES_OFFSET: Final = 21


TxnVerifier = Callable[[str, int, int, TopicPartition], ErrorCode | None]
"""(transactional id, producer id, producer epoch, partition) -> NONE when the partition is in
the producer's ongoing transaction, else the error; None when the transaction coordinator of
that id is not on this broker (no check)."""

_LEADER_HINTS_VERSION: Final = 10
"""Produce v10+ answers carry KIP-951's leader hints."""
_HINTED: Final = frozenset({ErrorCode.not_leader_or_follower})

_VERIFICATION_ERRORS: Final = {
    ErrorCode.concurrent_transactions: ErrorCode.not_enough_replicas,
    ErrorCode.coordinator_load_in_progress: ErrorCode.not_enough_replicas,
    ErrorCode.coordinator_not_available: ErrorCode.not_enough_replicas,
    ErrorCode.not_coordinator: ErrorCode.not_enough_replicas,
    ErrorCode.producer_fenced: ErrorCode.invalid_producer_epoch,
}
"""Kafka's produce answers for verification errors: retriable ones as NOT_ENOUGH_REPLICAS."""


class AcksZeroProduceError(CloseConnection):
    """Raised to close the connection of an acks=0 produce that failed somewhere (as Kafka)."""


def check_produce_records(version: int, records: BytesLike | None) -> tuple[ErrorCode, str] | None:
    """Kafka's per-request record checks: exactly one v2 batch; zstd only from v7.

    Looks at the first batch header only; a batch that does not frame properly is left to the
    partition log, which says precisely what is wrong with it.
    """
    if not records:
        return ErrorCode.invalid_record, f"produce v{version} needs one record batch per partition"
    if len(records) < HEADER_SIZE:
        return None
    magic = records[_MAGIC_OFFSET]
    if magic != MAGIC_V2:
        if magic in (0, 1):
            return (
                ErrorCode.invalid_record,
                f"produce v{version} accepts only magic v2 record batches, got v{magic}",
            )
        return None
    batch_size = LOG_OVERHEAD + int.from_bytes(records[8:12], "big", signed=True)
    if LOG_OVERHEAD < batch_size < len(records):
        return (
            ErrorCode.invalid_record,
            f"produce v{version} must carry exactly one record batch per partition",
        )
    codec = int.from_bytes(records[_ATTRIBUTES_OFFSET : _ATTRIBUTES_OFFSET + 2], "big")
    if version < 7 and codec & COMPRESSION_MASK == Compression.ZSTD:
        return (
            ErrorCode.unsupported_compression_type,
            f"produce v{version} may not use zstd compression (v7+)",
        )
    return None


class RecordsAppender(Protocol):
    """What Produce needs of the replica manager."""

    @property
    def image(self) -> MetadataImage:
        """The metadata image the replica manager applied last."""
        ...

    async def append_records(
        self,
        entries: Iterable[tuple[TopicPartition, BytesLike | None]],
        *,
        required_acks: int,
        timeout_ms: int,
        internal_topics_allowed: bool = False,
        origin: AppendOrigin = AppendOrigin.CLIENT,
    ) -> list[tuple[TopicPartition, AppendResult]]:
        """Append now, then for acks=all wait (Kafka's ``appendRecords``)."""
        ...


class ProduceHandler:
    """Answers Produce through the replica manager."""

    api_key: Final = ApiKey.PRODUCE
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.PRODUCE]

    def __init__(
        self,
        *,
        replica_manager: RecordsAppender,
        verify_txn: TxnVerifier | None = None,
    ) -> None:
        """``verify_txn``: the transaction coordinator's KIP-890 check (see the module docs)."""
        self._replica_manager = replica_manager
        self._verify_txn = verify_txn

    async def handle(self, context: RequestContext) -> HandlerResult:
        body: Any = context.body
        version = context.api_version
        acks = int(body.acks)
        entries, rejected = self._check(context, body)
        # The first await: the replica manager appends before it suspends (request order on a
        # connection), then waits for acks=all.
        appended = iter(
            await self._replica_manager.append_records(
                [entry for i, entry in enumerate(entries) if i not in rejected],
                required_acks=acks,
                timeout_ms=int(body.timeout.total_seconds() * 1000),
                internal_topics_allowed=context.header.client_id == ADMIN_CLIENT_ID,
            )
        )
        results = [
            (tp, rejected[i]) if i in rejected else next(appended)
            for i, (tp, _) in enumerate(entries)
        ]
        failed = [
            (tp, result)
            for tp, result in results
            if result.error != ErrorCode.none and not result.appended  # acks outcomes aside
        ]
        for tp, result in failed:
            log.warning(
                "produce to %s from %s (client id %r) failed: %s: %s",
                tp,
                context.client_address,
                context.header.client_id,
                result.error.name.upper(),
                result.message,
            )
        if acks == 0:
            if failed:
                raise AcksZeroProduceError(
                    f"closing the connection of an acks=0 producer after {len(failed)} failed "
                    f"partition(s), first {failed[0][0]}: {failed[0][1].error.name.upper()}"
                )
            return NO_RESPONSE
        # the connection counted the producer's byte rate and muted itself as it read the
        # request; the request quota counts the time spent on it up to here
        throttle_ms = max(context.throttle_ms, context.request_throttle())
        hints = None
        if version >= _LEADER_HINTS_VERSION and any(r.error in _HINTED for _, r in results):
            hints = LeaderHints(self._replica_manager.image, context.listener_name, _HINTED)
        return respond(context.request.correlation_id, version, results, throttle_ms, hints)

    def _check(
        self, context: RequestContext, body: Any
    ) -> tuple[list[tuple[TopicPartition, BytesLike | None]], dict[int, AppendResult]]:
        """Each partition's records, and the failures of those that may not be appended (by
        their index): authorization, the request-level checks and KIP-890 verification."""
        entries: list[tuple[TopicPartition, BytesLike | None]] = []
        rejected: dict[int, AppendResult] = {}
        authorizer = context.authorizer
        for topic in body.topic_data:
            denied = (
                None
                if authorizer is None
                else _denied(context, str(topic.name), body.transactional_id)
            )
            for partition in topic.partition_data:
                tp = TopicPartition(str(topic.name), int(partition.index))
                problem = denied or check_produce_records(context.api_version, partition.records)
                if problem is None and body.transactional_id is not None:
                    problem = self._check_txn(str(body.transactional_id), tp, partition.records)
                if problem is not None:
                    rejected[len(entries)] = AppendResult.failed(*problem)
                entries.append((tp, partition.records))
        return entries, rejected

    def _check_txn(
        self, transactional_id: str, tp: TopicPartition, records: BytesLike | None
    ) -> tuple[ErrorCode, str] | None:
        """KIP-890 verification of a transactional batch (None: it may be appended)."""
        if self._verify_txn is None or records is None or len(records) < HEADER_SIZE:
            return None
        header = BatchHeader.read(records)
        if not header.is_transactional:
            return None
        code = self._verify_txn(transactional_id, header.producer_id, header.producer_epoch, tp)
        if code is None or code is ErrorCode.none:
            return None
        if code is ErrorCode.invalid_txn_state:
            return code, f"{tp} is not in the ongoing transaction of {transactional_id!r}"
        code = _VERIFICATION_ERRORS.get(code, code)
        return code, f"transaction verification of {transactional_id!r}: {code.name.upper()}"


def _denied(
    context: RequestContext, topic: str, transactional_id: str | None
) -> tuple[ErrorCode, str] | None:
    """Kafka's produce authorization: WRITE on the transactional id, if any, and the topic."""
    if transactional_id is not None and not context.authorize(
        AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactional_id
    ):
        return ErrorCode.transactional_id_authorization_failed, "not authorized to write"
    if not context.authorize(AclOperation.WRITE, ResourceType.TOPIC, topic):
        return ErrorCode.topic_authorization_failed, f"not authorized to write to {topic}"
    return None


def _timestamp(ms: int) -> datetime.datetime | None:
    if ms < 0:
        return None
    return datetime.datetime.fromtimestamp(ms // 1000, tz=datetime.UTC).replace(
        microsecond=(ms % 1000) * 1000
    )


def _record_errors(schema: Any, result: AppendResult) -> tuple[Any, ...]:
    """Produce v8+'s ``record_errors`` (older versions have no such field)."""
    entity = getattr(schema, "BatchIndexAndErrorMessage", None)
    if entity is None:
        return ()
    return tuple(
        build(entity, batch_index=i32(index), batch_index_error_message=message)
        for index, message in result.record_errors
    )


def _leader(
    schema: Any, hints: LeaderHints | None, tp: TopicPartition, result: AppendResult
) -> dict[str, Any]:
    """The partition's ``current_leader`` field when the answer has hints."""
    if hints is None:
        return {}
    return {"current_leader": hints.current_leader(schema, tp, result.error)}


def _answers(
    results: list[tuple[TopicPartition, AppendResult]],
) -> list[tuple[str, list[tuple[PartitionAnswer, AppendResult]]]]:
    """Each partition's answer, grouped by topic in request order; a failed partition
    (its append or its acks=all wait) answers no offsets."""
    topics: list[tuple[str, list[tuple[PartitionAnswer, AppendResult]]]] = []
    for tp, result in results:
        ok = result.error == ErrorCode.none
        answer = PartitionAnswer(
            partition=tp.partition,
            error_code=result.error.value,
            base_offset=result.base_offset if ok else -1,
            log_append_time=result.log_append_time if ok and result.log_append_time >= 0 else -1,
            log_start_offset=result.log_start_offset,
            error_message=None if ok else result.message,
        )
        if topics and topics[-1][0] == tp.topic:
            topics[-1][1].append((answer, result))
        else:
            topics.append((tp.topic, [(answer, result)]))
    return topics


def respond(
    correlation_id: int,
    version: int,
    results: list[tuple[TopicPartition, AppendResult]],
    throttle_ms: int = 0,
    hints: LeaderHints | None = None,
) -> HandlerResult:
    """The response: packed from plain values (no kio objects) unless a partition has
    per-record errors or a leader hint, or the packer declines, then kio's ``build_response``."""
    if hints is not None or any(result.record_errors for _, result in results):
        return build_response(version, results, throttle_ms, hints)
    topics = [
        (name, [partition for partition, _ in entries]) for name, entries in _answers(results)
    ]
    body = pack_produce_response(version, topics, throttle_ms=throttle_ms)
    if body is None:
        return build_response(version, results, throttle_ms)
    header_version = response_header_version(version)
    return Response.of(
        encode_response_header(correlation_id=correlation_id, version=header_version) + body
    )


def build_response(
    version: int,
    results: list[tuple[TopicPartition, AppendResult]],
    throttle_ms: int = 0,
    hints: LeaderHints | None = None,
) -> ResponsePayload:
    """The ProduceResponse of ``version`` as kio's objects, with ``hints``' current leaders."""
    schema = response_module(ApiKey.PRODUCE, version)
    topics = [
        build(
            schema.TopicProduceResponse,
            name=name,
            partition_responses=tuple(
                build(
                    schema.PartitionProduceResponse,
                    index=i32(partition.partition),
                    error_code=ErrorCode(partition.error_code),
                    base_offset=i64(partition.base_offset),
                    log_append_time=_timestamp(partition.log_append_time),
                    log_start_offset=i64(partition.log_start_offset),
                    record_errors=_record_errors(schema, result),
                    error_message=partition.error_message,
                    **_leader(schema, hints, TopicPartition(name, partition.partition), result),
                )
                for partition, result in entries
            ),
        )
        for name, entries in _answers(results)
    ]
    response: ResponsePayload = build(
        schema.ProduceResponse,
        responses=tuple(topics),
        throttle_time=throttle_field(throttle_ms),
        node_endpoints=() if hints is None else hints.node_endpoints(schema),
    )
    return response
