"""The classic group coordinator: membership (:mod:`.membership`) plus committed offsets and
the admin APIs (Kafka's ``OffsetMetadataManager`` and the group parts of its
``GroupCoordinatorService``), without I/O.

Transactional offset commits (TxnOffsetCommit) are written in the producer's transaction and
wait in :class:`~strom.coordinator.group.txn_offsets.PendingTransactionalOffsets` until its
marker reaches the group's partition (:meth:`GroupCoordinator.complete_transaction`).

Offsets are written as ``OffsetCommit`` records and applied when the writer says they are
committed, so a reply never reports an offset that could be lost. Offsets of Empty groups
expire ``offsets.retention.minutes`` after the group became empty (or after the commit, for a
group that never had members), or at an OffsetCommit v2-v4 expire timestamp; in a Stable
consumer group, offsets of topics no member subscribes to any more expire too (KIP-496).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from kio.schema.types import GroupId
from kio.static.primitive import i32, i64

from strom.common import ErrorCode, RandomSource
from strom.coordinator.group.group import ClassicGroup, OffsetAndMetadata
from strom.coordinator.group.membership import (
    NO_THROTTLE,
    ClassicGroupMembership,
    CoordinatorSettings,
    PartitionWriter,
    Reply,
    check_member,
)
from strom.coordinator.group.records import (
    CoordinatorRecord,
    GroupMetadataKey,
    OffsetCommitKey,
    OffsetCommitValue,
)
from strom.coordinator.group.state import GroupState
from strom.coordinator.group.txn_offsets import PendingTransactionalOffsets
from strom.protocol.batch import NO_PRODUCER_ID

if TYPE_CHECKING:  # the schemas load where the answers are built, on first use
    from kio.schema.delete_groups.v2 import response as delete
    from kio.schema.describe_groups.v6 import response as describe
    from kio.schema.list_groups.v5 import request as list_req
    from kio.schema.list_groups.v5 import response as listing
    from kio.schema.offset_commit.v9 import request as commit_req
    from kio.schema.offset_commit.v9 import response as commit
    from kio.schema.offset_delete.v0 import request as offset_delete_req
    from kio.schema.offset_delete.v0 import response as offset_delete
    from kio.schema.offset_fetch.v9 import request as fetch_req
    from kio.schema.offset_fetch.v9 import response as fetch
    from kio.schema.txn_offset_commit.v5 import request as txn_commit_req
    from kio.schema.txn_offset_commit.v5 import response as txn_commit

__all__ = ["GroupCoordinator"]

CLASSIC_GROUP_TYPE = "classic"

PartitionKey = tuple[str, int]
"""(topic, partition)"""


class _CommitPartition(Protocol):
    """A partition of an OffsetCommit or TxnOffsetCommit request."""

    @property
    def partition_index(self) -> int: ...
    @property
    def committed_offset(self) -> int: ...
    @property
    def committed_leader_epoch(self) -> int: ...
    @property
    def committed_metadata(self) -> str | None: ...


class _CommitTopic(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def partitions(self) -> Sequence[_CommitPartition]: ...


class GroupCoordinator(ClassicGroupMembership):
    """Every classic group and its offsets (see the module docs)."""

    def __init__(
        self,
        *,
        settings: CoordinatorSettings,
        writer: PartitionWriter,
        random: RandomSource,
        topic_exists: Callable[[str, int], bool],
    ) -> None:
        super().__init__(settings=settings, writer=writer, random=random, topic_exists=topic_exists)
        self.pending_txn_offsets = PendingTransactionalOffsets()

    def unload_partition(self, partition: int) -> set[str]:
        """Another broker leads ``partition`` now: its groups, their timers and their pending
        transactional offsets go; the ids of the groups dropped."""
        gone = super().unload_partition(partition)
        self.pending_txn_offsets.forget(gone)
        return gone

    def offset_commit(
        self,
        request: commit_req.OffsetCommitRequest,
        *,
        retention_ms: int = -1,
        now_ms: int,
        reply: Reply[commit.OffsetCommitResponse],
    ) -> None:
        """OffsetCommit; ``retention_ms`` is v2-v4's retention time (-1: the broker's)."""
        group_id = str(request.group_id)
        generation = int(request.generation_id_or_member_epoch)
        # GROUP_ID_NOT_FOUND for an unknown group with a generation: ILLEGAL_GENERATION before v9
        group, error = self._group_to_commit(
            group_id, generation, ErrorCode.group_id_not_found, now_ms
        )
        if group is not None:
            error = self._validate_commit(
                group,
                generation=generation,
                member_id=request.member_id,
                instance_id=request.group_instance_id,
                transactional=False,
                now_ms=now_ms,
            )
        if error is not ErrorCode.none or group is None:
            reply(_commit_response(request, lambda topic, partition: error))
            return
        expire = now_ms + retention_ms if retention_ms >= 0 else -1
        accepted, errors = self._accept_offsets(request.topics, now_ms=now_ms, expire=expire)
        if not accepted:
            reply(_commit_response(request, lambda topic, partition: errors[(topic, partition)]))
            return

        def done(code: ErrorCode) -> None:
            if code is ErrorCode.none:
                live = self.groups.setdefault(group_id, group)
                live.offsets.update(accepted)
                self.pending_txn_offsets.supersede(group_id, accepted)
            reply(
                _commit_response(
                    request, lambda topic, partition: errors.get((topic, partition), code)
                )
            )

        self.write(group_id, _offset_records(group_id, accepted), done)

    def txn_offset_commit(
        self,
        request: txn_commit_req.TxnOffsetCommitRequest,
        *,
        now_ms: int,
        reply: Reply[txn_commit.TxnOffsetCommitResponse],
        verify: Callable[[int], ErrorCode] | None = None,
    ) -> None:
        """TxnOffsetCommit: the offsets go to the group's partition in a transactional batch of
        the producer and stay pending until its marker (:meth:`complete_transaction`).

        ``verify(partition)``: whether the group's ``__consumer_offsets`` partition is in the
        producer's ongoing transaction (KIP-890 verification; its error answers otherwise).
        """
        group_id = str(request.group_id)
        generation = int(request.generation_id)
        group, error = self._group_to_commit(
            group_id, generation, ErrorCode.illegal_generation, now_ms
        )
        if group is not None and verify is not None:
            error = verify(self.partition_of(group_id))
        if group is not None and error is ErrorCode.none:
            error = self._validate_commit(
                group,
                generation=generation,
                member_id=request.member_id,
                instance_id=request.group_instance_id,
                transactional=True,
                now_ms=now_ms,
            )
        producer_id = int(request.producer_id)
        if error is ErrorCode.none and producer_id == NO_PRODUCER_ID:
            error = ErrorCode.invalid_txn_state  # no transaction can hold these offsets
        if error is not ErrorCode.none or group is None:
            reply(_txn_commit_response(request, lambda topic, partition: error))
            return
        accepted, errors = self._accept_offsets(request.topics, now_ms=now_ms, expire=-1)
        if not accepted:
            reply(
                _txn_commit_response(request, lambda topic, partition: errors[(topic, partition)])
            )
            return

        def done(code: ErrorCode) -> None:
            if code is ErrorCode.none:
                self.groups.setdefault(group_id, group)
                self.pending_txn_offsets.add(producer_id, group_id, accepted)
            reply(
                _txn_commit_response(
                    request, lambda topic, partition: errors.get((topic, partition), code)
                )
            )

        self.write(
            group_id,
            _offset_records(group_id, accepted),
            done,
            producer_id=producer_id,
            producer_epoch=int(request.producer_epoch),
        )

    def complete_transaction(self, partition: int, producer_id: int, *, commit: bool) -> None:
        """The transaction marker of ``producer_id`` was written to (or is replayed from) the
        ``__consumer_offsets`` partition ``partition``: the producer's pending offsets of the
        groups there become their committed offsets (``commit``) or are dropped."""
        if self.partition_count is None:
            return
        decided = self.pending_txn_offsets.complete(
            producer_id, lambda group_id: self.partition_of(group_id) == partition
        )
        if not commit:
            return
        for group_id, offsets in decided.items():
            if offsets:
                self.groups.setdefault(group_id, ClassicGroup(group_id)).offsets.update(offsets)

    def replay(self, record: CoordinatorRecord, *, producer_id: int = NO_PRODUCER_ID) -> None:
        """Apply a record read back from ``__consumer_offsets``; an offset from a transactional
        batch of ``producer_id`` waits for that producer's marker (:meth:`complete_transaction`)."""
        key = record.key
        if isinstance(key, OffsetCommitKey):
            tp = (key.topic, key.partition)
            if producer_id != NO_PRODUCER_ID and isinstance(record.value, OffsetCommitValue):
                self.groups.setdefault(key.group, ClassicGroup(key.group))
                self.pending_txn_offsets.add(
                    producer_id, key.group, {tp: OffsetAndMetadata.of_value(record.value)}
                )
                return
            self.pending_txn_offsets.supersede(key.group, [tp])
        super().replay(record)

    def _group_to_commit(
        self, group_id: str, generation: int, unknown_error: ErrorCode, now_ms: int
    ) -> tuple[ClassicGroup | None, ErrorCode]:
        """The group a commit goes to: a new simple group (not stored yet) when it is unknown
        and the commit has no generation; ``unknown_error`` when it has one."""
        error = ErrorCode.invalid_group_id if not group_id else self.group_error(group_id)
        if error is not ErrorCode.none:
            return None, error
        group = self.groups.get(group_id)
        if group is not None:
            return group, ErrorCode.none
        if generation >= 0:
            return None, unknown_error
        return ClassicGroup(group_id, state_timestamp=now_ms), ErrorCode.none

    def _validate_commit(
        self,
        group: ClassicGroup,
        *,
        generation: int,
        member_id: str,
        instance_id: str | None,
        transactional: bool,
        now_ms: int,
    ) -> ErrorCode:
        """Kafka's ``ClassicGroup.validateOffsetCommit``: a transactional commit without a
        member (TxnOffsetCommit before v3) is accepted in any state, and needs no completed
        rebalance."""
        if group.state is GroupState.DEAD:
            return ErrorCode.coordinator_not_available
        if generation < 0 and group.state is GroupState.EMPTY:
            return ErrorCode.none  # a simple consumer group (manual assignment)
        if generation >= 0 or member_id or instance_id is not None:
            error = check_member(group, member_id, instance_id)
            if error is not ErrorCode.none:
                return error
            if generation != group.generation:
                return ErrorCode.illegal_generation
        elif not transactional:
            return ErrorCode.unknown_member_id  # only members commit in a group with members
        if transactional:
            return ErrorCode.none
        if group.state is GroupState.COMPLETING_REBALANCE:
            return ErrorCode.rebalance_in_progress
        self._schedule_session(group, group.members[member_id], now_ms)
        return ErrorCode.none

    def _accept_offsets(
        self, topics: Iterable[_CommitTopic], *, now_ms: int, expire: int
    ) -> tuple[dict[PartitionKey, OffsetAndMetadata], dict[PartitionKey, ErrorCode]]:
        """The offsets of a commit that may be written, and the errors of the others."""
        accepted: dict[PartitionKey, OffsetAndMetadata] = {}
        errors: dict[PartitionKey, ErrorCode] = {}
        for topic in topics:
            for p in topic.partitions:
                tp = (str(topic.name), int(p.partition_index))
                metadata = p.committed_metadata or ""
                if not self._topic_exists(*tp):
                    errors[tp] = ErrorCode.unknown_topic_or_partition
                elif len(metadata.encode()) > self.settings.offset_metadata_max_bytes:
                    errors[tp] = ErrorCode.offset_metadata_too_large
                else:
                    accepted[tp] = OffsetAndMetadata(
                        int(p.committed_offset),
                        int(p.committed_leader_epoch),
                        metadata,
                        now_ms,
                        expire,
                    )
        return accepted, errors

    def offset_fetch(self, request: fetch_req.OffsetFetchRequest) -> fetch.OffsetFetchResponse:
        """OffsetFetch; with ``require_stable`` (v7+), a partition with a pending transactional
        offset answers UNSTABLE_OFFSET_COMMIT (the client retries)."""
        from kio.schema.offset_fetch.v9 import response as fetch  # noqa: PLC0415

        return fetch.OffsetFetchResponse(
            throttle_time=NO_THROTTLE,
            groups=tuple(
                self._fetch_group(group, require_stable=request.require_stable)
                for group in request.groups
            ),
        )

    def _fetch_group(
        self, request: fetch_req.OffsetFetchRequestGroup, *, require_stable: bool
    ) -> fetch.OffsetFetchResponseGroup:
        from kio.schema.offset_fetch.v9 import response as fetch  # noqa: PLC0415

        group_id = str(request.group_id)
        error = self.group_error(group_id)
        if error is not ErrorCode.none:
            return fetch.OffsetFetchResponseGroup(
                group_id=request.group_id, topics=(), error_code=error
            )
        group = self.groups.get(group_id)
        offsets = {} if group is None else group.offsets
        wanted: dict[str, list[int]] = {}
        if request.topics is None:
            for name, partition in sorted(offsets):
                wanted.setdefault(name, []).append(partition)
        else:
            for asked in request.topics:
                wanted.setdefault(str(asked.name), []).extend(
                    int(p) for p in asked.partition_indexes
                )
        topics = []
        for topic, partitions in wanted.items():
            answers = []
            for partition in partitions:
                if require_stable and self.pending_txn_offsets.is_pending(
                    group_id, (topic, partition)
                ):
                    answers.append(_unstable(partition))
                    continue
                committed = offsets.get((topic, partition))
                answers.append(
                    fetch.OffsetFetchResponsePartitions(
                        partition_index=i32(partition),
                        committed_offset=i64(-1 if committed is None else committed.offset),
                        committed_leader_epoch=i32(
                            -1 if committed is None else committed.leader_epoch
                        ),
                        metadata="" if committed is None else committed.metadata,
                        error_code=ErrorCode.none,
                    )
                )
            topics.append(fetch.OffsetFetchResponseTopics(name=topic, partitions=tuple(answers)))  # type: ignore[arg-type]
        return fetch.OffsetFetchResponseGroup(
            group_id=request.group_id, topics=tuple(topics), error_code=ErrorCode.none
        )

    def describe_groups(self, group_ids: tuple[GroupId, ...]) -> describe.DescribeGroupsResponse:
        """Groups this coordinator does not know are Dead with GROUP_ID_NOT_FOUND (v6's answer;
        older versions answer NONE)."""
        from kio.schema.describe_groups.v6 import response as describe  # noqa: PLC0415

        return describe.DescribeGroupsResponse(
            throttle_time=NO_THROTTLE, groups=tuple(self._describe(g) for g in group_ids)
        )

    def _describe(self, group_id: GroupId) -> describe.DescribedGroup:
        from kio.schema.describe_groups.v6 import response as describe  # noqa: PLC0415

        error = self.group_error(str(group_id))
        group = self.groups.get(str(group_id)) if error is ErrorCode.none else None
        if group is None or group.state is GroupState.DEAD:
            if error is ErrorCode.none:
                error = ErrorCode.group_id_not_found
            return describe.DescribedGroup(
                error_code=error,
                error_message=None
                if error is not ErrorCode.group_id_not_found
                else f"Group {group_id} not found.",
                group_id=group_id,
                group_state=GroupState.DEAD.value,
                protocol_type="",
                protocol_data="",
                members=(),
            )
        stable = group.state is GroupState.STABLE
        protocol = group.protocol_name or ""
        return describe.DescribedGroup(
            error_code=ErrorCode.none,
            error_message=None,
            group_id=group_id,
            group_state=group.state.value,
            protocol_type=group.protocol_type or "",
            protocol_data=protocol if stable else "",
            members=tuple(
                describe.DescribedGroupMember(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    member_metadata=m.metadata(protocol) if stable else b"",
                    member_assignment=m.assignment if stable else b"",
                )
                for m in group.members.values()
            ),
        )

    def list_groups(self, request: list_req.ListGroupsRequest) -> listing.ListGroupsResponse:
        from kio.schema.list_groups.v5 import response as listing  # noqa: PLC0415

        states = {s.lower() for s in request.states_filter}
        types = {t.lower() for t in request.types_filter}
        groups = []
        if not types or CLASSIC_GROUP_TYPE in types:
            for group in self.groups.values():
                if self.group_error(group.group_id) is not ErrorCode.none:
                    continue
                if group.state is GroupState.DEAD or (
                    states and group.state.value.lower() not in states
                ):
                    continue
                groups.append(
                    listing.ListedGroup(
                        group_id=GroupId(group.group_id),
                        protocol_type=group.protocol_type or "",
                        group_state=group.state.value,
                        group_type=CLASSIC_GROUP_TYPE,
                    )
                )
        return listing.ListGroupsResponse(
            throttle_time=NO_THROTTLE, error_code=ErrorCode.none, groups=tuple(groups)
        )

    def delete_groups(
        self, group_ids: tuple[GroupId, ...], *, reply: Reply[delete.DeleteGroupsResponse]
    ) -> None:
        """Delete Empty groups: tombstones for their offsets and metadata, then they are gone."""
        from kio.schema.delete_groups.v2 import response as delete  # noqa: PLC0415

        results: dict[GroupId, ErrorCode] = {}
        waiting = set()
        for group_id in dict.fromkeys(group_ids):
            error = self._deletable(str(group_id))
            results[group_id] = error
            if error is ErrorCode.none:
                waiting.add(group_id)

        def answer() -> None:
            reply(
                delete.DeleteGroupsResponse(
                    throttle_time=NO_THROTTLE,
                    results=tuple(
                        delete.DeletableGroupResult(group_id=g, error_code=e)
                        for g, e in results.items()
                    ),
                )
            )

        if not waiting:
            answer()
            return
        for group_id in list(waiting):
            group = self.groups[str(group_id)]
            group.transition_to(GroupState.DEAD, group.state_timestamp)
            # pending transactional offsets get tombstones too, so a later COMMIT stays void
            offsets = group.offsets.keys() | self.pending_txn_offsets.partitions_of(str(group_id))

            def done(
                code: ErrorCode,
                group_id: GroupId = group_id,
                group: ClassicGroup = group,
                offsets: set[PartitionKey] = offsets,
            ) -> None:
                results[group_id] = code
                if code is ErrorCode.none:
                    self.pending_txn_offsets.supersede(group.group_id, offsets)
                    if self.groups.get(group.group_id) is group:
                        del self.groups[group.group_id]
                else:
                    group.state = GroupState.EMPTY
                waiting.discard(group_id)
                if not waiting:
                    answer()

            self.write(str(group_id), _group_tombstones(str(group_id), offsets), done)

    def _deletable(self, group_id: str) -> ErrorCode:
        error = ErrorCode.invalid_group_id if not group_id else self.group_error(group_id)
        if error is not ErrorCode.none:
            return error
        group = self.groups.get(group_id)
        if group is None or group.state is GroupState.DEAD:
            return ErrorCode.group_id_not_found
        if group.state is not GroupState.EMPTY:
            return ErrorCode.non_empty_group
        return ErrorCode.none

    def offset_delete(
        self,
        request: offset_delete_req.OffsetDeleteRequest,
        *,
        reply: Reply[offset_delete.OffsetDeleteResponse],
    ) -> None:
        group_id = str(request.group_id)
        error = ErrorCode.invalid_group_id if not group_id else self.group_error(group_id)
        group = self.groups.get(group_id)
        if error is ErrorCode.none and (group is None or group.state is GroupState.DEAD):
            error = ErrorCode.group_id_not_found
        if (
            error is ErrorCode.none
            and group is not None
            and group.state is not GroupState.EMPTY
            and group.protocol_type != "consumer"
        ):
            error = ErrorCode.non_empty_group
        if error is not ErrorCode.none or group is None:
            reply(_offset_delete_response(error, request, {}))
            return
        errors: dict[tuple[str, int], ErrorCode] = {}
        records = []
        for topic in request.topics:
            subscribed = group.state is not GroupState.EMPTY and group.is_subscribed_to(topic.name)
            for p in topic.partitions:
                tp = (str(topic.name), int(p.partition_index))
                if subscribed:
                    errors[tp] = ErrorCode.group_subscribed_to_topic
                elif tp in group.offsets:
                    records.append(CoordinatorRecord(OffsetCommitKey(group_id, *tp), None))
        if not records:
            reply(_offset_delete_response(ErrorCode.none, request, errors))
            return

        def done(code: ErrorCode) -> None:
            for record in records:
                key = record.key
                assert isinstance(key, OffsetCommitKey)
                if code is ErrorCode.none:
                    group.offsets.pop((key.topic, key.partition), None)
                    self.pending_txn_offsets.supersede(group_id, [(key.topic, key.partition)])
                else:
                    errors[(key.topic, key.partition)] = code
            reply(_offset_delete_response(ErrorCode.none, request, errors))

        self.write(group_id, records, done)

    def expire_offsets(self, now_ms: int) -> None:
        for group in list(self.groups.values()):
            if self.group_error(group.group_id) is not ErrorCode.none:
                continue
            expired = [
                tp
                for tp, committed in group.offsets.items()
                if (deadline := self._expiry_deadline(group, tp[0], committed)) is not None
                and now_ms >= deadline
                and not self.pending_txn_offsets.is_pending(group.group_id, tp)
            ]
            if not expired:
                continue
            for tp in expired:
                del group.offsets[tp]
            records = [
                CoordinatorRecord(OffsetCommitKey(group.group_id, *tp), None) for tp in expired
            ]
            if (
                group.state is GroupState.EMPTY
                and not group.offsets
                and not self.pending_txn_offsets.has_open_transactions(group.group_id)
            ):
                group.transition_to(GroupState.DEAD, now_ms)
                records.append(CoordinatorRecord(GroupMetadataKey(group.group_id), None))
                del self.groups[group.group_id]
            self.write(group.group_id, records, lambda code: None)

    def _expiry_deadline(
        self, group: ClassicGroup, topic: str, committed: OffsetAndMetadata
    ) -> int | None:
        """When a committed offset expires (None: not while the group is as it is). Kafka's
        rules: all offsets of an Empty group, counted from when it became empty (or from the
        commit, for a group that never had members); in a Stable consumer group, the offsets of
        topics no member subscribes to any more (KIP-496), counted from the commit."""
        if group.state is GroupState.EMPTY:
            base = max(group.state_timestamp, committed.commit_timestamp)
        elif group.state is GroupState.STABLE:
            topics = group.subscribed_topics()
            if topics is None or topic in topics:
                return None
            base = committed.commit_timestamp
        else:
            return None
        if committed.expire_timestamp >= 0:
            return committed.expire_timestamp
        return base + self.settings.offsets_retention_ms


def _group_tombstones(group_id: str, offsets: Iterable[PartitionKey]) -> list[CoordinatorRecord]:
    records = [
        CoordinatorRecord(OffsetCommitKey(group_id, topic, partition), None)
        for topic, partition in offsets
    ]
    records.append(CoordinatorRecord(GroupMetadataKey(group_id), None))
    return records


def _offset_records(
    group_id: str, offsets: dict[PartitionKey, OffsetAndMetadata]
) -> list[CoordinatorRecord]:
    return [
        CoordinatorRecord(
            OffsetCommitKey(group_id, topic, partition),
            OffsetCommitValue(
                offset=o.offset,
                metadata=o.metadata,
                commit_timestamp=o.commit_timestamp,
                leader_epoch=o.leader_epoch,
                expire_timestamp=o.expire_timestamp,
            ),
        )
        for (topic, partition), o in offsets.items()
    ]


def _unstable(partition: int) -> fetch.OffsetFetchResponsePartitions:
    """A partition with an undecided transactional offset, for a ``require_stable`` fetch."""
    from kio.schema.offset_fetch.v9 import response as fetch  # noqa: PLC0415

    return fetch.OffsetFetchResponsePartitions(
        partition_index=i32(partition),
        committed_offset=i64(-1),
        committed_leader_epoch=i32(-1),
        metadata="",
        error_code=ErrorCode.unstable_offset_commit,
    )


def _partition_errors(
    topics: Iterable[_CommitTopic],
    error_of: Callable[[str, int], ErrorCode],
    topic_type: Callable[..., Any],
    partition_type: Callable[..., Any],
) -> tuple[Any, ...]:
    """A commit's answer per topic and partition, in the classes of the response."""
    return tuple(
        topic_type(
            name=topic.name,
            partitions=tuple(
                partition_type(
                    partition_index=p.partition_index,
                    error_code=error_of(str(topic.name), int(p.partition_index)),
                )
                for p in topic.partitions
            ),
        )
        for topic in topics
    )


def _commit_response(
    request: commit_req.OffsetCommitRequest, error_of: Callable[[str, int], ErrorCode]
) -> commit.OffsetCommitResponse:
    from kio.schema.offset_commit.v9 import response as commit  # noqa: PLC0415

    return commit.OffsetCommitResponse(
        throttle_time=NO_THROTTLE,
        topics=_partition_errors(
            request.topics,
            error_of,
            commit.OffsetCommitResponseTopic,
            commit.OffsetCommitResponsePartition,
        ),
    )


def _txn_commit_response(
    request: txn_commit_req.TxnOffsetCommitRequest, error_of: Callable[[str, int], ErrorCode]
) -> txn_commit.TxnOffsetCommitResponse:
    from kio.schema.txn_offset_commit.v5 import response as txn_commit  # noqa: PLC0415

    return txn_commit.TxnOffsetCommitResponse(
        throttle_time=NO_THROTTLE,
        topics=_partition_errors(
            request.topics,
            error_of,
            txn_commit.TxnOffsetCommitResponseTopic,
            txn_commit.TxnOffsetCommitResponsePartition,
        ),
    )


def _offset_delete_response(
    error: ErrorCode,
    request: offset_delete_req.OffsetDeleteRequest,
    errors: dict[tuple[str, int], ErrorCode],
) -> offset_delete.OffsetDeleteResponse:
    from kio.schema.offset_delete.v0 import response as offset_delete  # noqa: PLC0415

    return offset_delete.OffsetDeleteResponse(
        error_code=error,
        throttle_time=NO_THROTTLE,
        topics=()
        if error is not ErrorCode.none
        else tuple(
            offset_delete.OffsetDeleteResponseTopic(
                name=topic.name,
                partitions=tuple(
                    offset_delete.OffsetDeleteResponsePartition(
                        partition_index=p.partition_index,
                        error_code=errors.get(
                            (str(topic.name), int(p.partition_index)), ErrorCode.none
                        ),
                    )
                    for p in topic.partitions
                ),
            )
            for topic in request.topics
        ),
    )
