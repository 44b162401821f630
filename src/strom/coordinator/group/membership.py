"""Group membership of the classic group coordinator (Kafka's ``GroupMetadataManager`` for
classic groups), without I/O: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, the timers, the
loading of ``__consumer_offsets``. :class:`strom.coordinator.group.coordinator.GroupCoordinator`
adds offsets and the admin APIs.

Requests come in as kio bodies of the newest version with the time (``now_ms``) and a
``reply`` callback; the answer goes to ``reply`` at once, or later (a JoinGroup held until the
rebalance completes, a SyncGroup until the leader's assignment, anything that writes records
until the :class:`PartitionWriter` says they are committed). Timers are deadlines: the shell
calls :meth:`GroupCoordinator.poll` at :meth:`GroupCoordinator.next_deadline`. The shell also
feeds the records of ``__consumer_offsets`` back through :meth:`GroupCoordinator.replay` when
the broker starts. See ``NOTES.md`` beside this module for the invariants.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from kio.static.primitive import i32, i32Timedelta

from strom.common import ErrorCode, RandomSource
from strom.coordinator.group.group import ClassicGroup, GroupMember, OffsetAndMetadata
from strom.coordinator.group.records import (
    CoordinatorRecord,
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
)
from strom.coordinator.group.state import GroupState
from strom.coordinator.partitions import PartitionedCoordinator
from strom.protocol.batch import NO_PRODUCER_ID

if TYPE_CHECKING:  # the schemas load where the answers are built, on first use
    from kio.schema.heartbeat.v4 import request as heartbeat_req
    from kio.schema.heartbeat.v4 import response as heartbeat
    from kio.schema.join_group.v9 import request as join_req
    from kio.schema.join_group.v9 import response as join
    from kio.schema.leave_group.v5 import request as leave_req
    from kio.schema.leave_group.v5 import response as leave
    from kio.schema.sync_group.v5 import request as sync_req
    from kio.schema.sync_group.v5 import response as sync

__all__ = ["ClassicGroupMembership", "CoordinatorSettings", "PartitionWriter", "Reply"]

T = TypeVar("T")
Reply = Callable[[T], None]
"""Where an answer goes (once)."""

NO_PRODUCER_EPOCH = -1

NO_THROTTLE = i32Timedelta.parse(datetime.timedelta(0))
NO_GENERATION = -1
NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000
"""How long a new member's first JoinGroup may wait for the rebalance before the member is
dropped (Kafka's ``CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS``); later it has its session."""


class PartitionWriter(Protocol):
    """Appends records to a ``__consumer_offsets`` partition and says when they are committed
    (``ErrorCode.none``) or why not. With a ``producer_id`` the records form a transactional
    batch of that producer (TxnOffsetCommit), decided later by its transaction marker."""

    def append(
        self,
        partition: int,
        records: Sequence[CoordinatorRecord],
        done: Callable[[ErrorCode], None],
        *,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
    ) -> None: ...


@dataclass(frozen=True, slots=True)
class CoordinatorSettings:
    """Kafka's ``group.*`` and ``offsets.*`` settings the coordinator uses."""

    initial_rebalance_delay_ms: int = 3000
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    max_size: int = 2**31 - 1
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000
    retention_check_interval_ms: int = 600_000
    offset_metadata_max_bytes: int = 4096


class ClassicGroupMembership(PartitionedCoordinator):
    """Every classic group of the ``__consumer_offsets`` partitions this broker leads."""

    def __init__(
        self,
        *,
        settings: CoordinatorSettings,
        writer: PartitionWriter,
        random: RandomSource,
        topic_exists: Callable[[str, int], bool],
    ) -> None:
        """``topic_exists(topic, partition)``: whether a commit may name that partition."""
        super().__init__("__consumer_offsets")
        self.settings = settings
        self._writer = writer
        self._random = random
        self._topic_exists = topic_exists
        self.groups: dict[str, ClassicGroup] = {}
        self._timers: dict[tuple[str, ...], tuple[int, Callable[[int], None]]] = {}
        self._next_retention: int | None = None

    # --- partitions and loading -------------------------------------------------------------

    def unload_partition(self, partition: int) -> set[str]:
        """Another broker leads ``partition`` now: its groups and their timers go (they load
        there); the ids of the groups dropped."""
        self._partitions.unload(partition)
        gone = {group_id for group_id in self.groups if self.partition_of(group_id) == partition}
        for group_id in gone:
            del self.groups[group_id]
        self._timers = {key: timer for key, timer in self._timers.items() if key[1] not in gone}
        return gone

    def finish_loading(self, partition: int, now_ms: int) -> None:
        """``partition`` is replayed: its groups serve requests; members get a session."""
        self._partitions.finish_loading(partition)
        for group in self.groups.values():
            if self.partition_of(group.group_id) == partition:
                for member in group.members.values():
                    self._schedule_session(group, member, now_ms)
        if self._next_retention is None:
            self._next_retention = now_ms + self.settings.retention_check_interval_ms

    def group_error(self, group_id: str) -> ErrorCode:
        """NOT_COORDINATOR before the topic exists, COORDINATOR_LOAD_IN_PROGRESS while the
        group's partition loads, NONE when requests for the group may be served."""
        return self._partitions.error(group_id)

    def replay(self, record: CoordinatorRecord) -> None:
        """Apply a record read back from ``__consumer_offsets`` (while loading)."""
        key = record.key
        if isinstance(key, OffsetCommitKey):
            group = self.groups.get(key.group)
            if record.value is None:
                if group is not None:
                    group.offsets.pop((key.topic, key.partition), None)
                    self._forget_if_dead(group)
                return
            assert isinstance(record.value, OffsetCommitValue)
            group = group or self.groups.setdefault(key.group, ClassicGroup(key.group))
            group.offsets[(key.topic, key.partition)] = OffsetAndMetadata.of_value(record.value)
            return
        if record.value is None:
            group = self.groups.get(key.group)
            if group is not None:
                group.load_metadata(None)
                self._forget_if_dead(group)
            return
        assert isinstance(record.value, GroupMetadataValue)
        group = self.groups.setdefault(key.group, ClassicGroup(key.group))
        group.load_metadata(record.value)

    def _forget_if_dead(self, group: ClassicGroup) -> None:
        if group.state is GroupState.EMPTY and not group.offsets and group.generation == 0:
            self.groups.pop(group.group_id, None)

    # --- timers -----------------------------------------------------------------------------

    def next_deadline(self) -> int | None:
        """The earliest time :meth:`poll` has work to do (None: nothing scheduled)."""
        deadlines = [deadline for deadline, _ in self._timers.values()]
        if self._next_retention is not None:
            deadlines.append(self._next_retention)
        return min(deadlines, default=None)

    def poll(self, now_ms: int) -> None:
        """Run every timer due at ``now_ms`` (sessions, rebalances, offset expiry)."""
        while True:
            due = [
                (deadline, key) for key, (deadline, _) in self._timers.items() if deadline <= now_ms
            ]
            if not due:
                break
            _, key = min(due)
            _, action = self._timers.pop(key)
            action(now_ms)
        if self._next_retention is not None and self._next_retention <= now_ms:
            self._next_retention = now_ms + self.settings.retention_check_interval_ms
            self.expire_offsets(now_ms)

    def expire_offsets(self, now_ms: int) -> None:
        """Offset retention (the coordinator's); runs every retention check interval."""

    def _schedule(self, key: tuple[str, ...], deadline: int, action: Callable[[int], None]) -> None:
        self._timers[key] = (deadline, action)

    def _cancel(self, key: tuple[str, ...]) -> None:
        self._timers.pop(key, None)

    def _schedule_session(self, group: ClassicGroup, member: GroupMember, now_ms: int) -> None:
        group_id, member_id = group.group_id, member.member_id
        self._schedule(
            ("session", group_id, member_id),
            now_ms + member.session_timeout_ms,
            lambda now: self._on_session_expired(group_id, member_id, now),
        )

    def _on_session_expired(self, group_id: str, member_id: str, now_ms: int) -> None:
        group = self.groups.get(group_id)
        member = None if group is None else group.members.get(member_id)
        if group is None or member is None:
            return
        blocked = member.awaiting_join is not None or member.awaiting_sync is not None
        if blocked and not member.is_new:
            self._schedule_session(group, member, now_ms)  # blocked in a request: alive
            return
        self._remove_member_and_update(group, member, now_ms)

    # --- membership ----------------------------------------------------------------------------

    def _new_member_id(self, client_id: str) -> str:
        return f"{client_id}-{uuid.UUID(int=self._random.getrandbits(128), version=4)}"

    def join_group(
        self,
        request: join_req.JoinGroupRequest,
        *,
        client_id: str,
        client_host: str,
        require_known_member_id: bool,
        now_ms: int,
        reply: Reply[join.JoinGroupResponse],
    ) -> None:
        """JoinGroup; ``require_known_member_id`` for v4+ (MEMBER_ID_REQUIRED on a first join)."""
        group_id, member_id = str(request.group_id), request.member_id

        def fail(code: ErrorCode) -> None:
            reply(_join_error(code, member_id))

        error = ErrorCode.invalid_group_id if not group_id else self.group_error(group_id)
        if error is not ErrorCode.none:
            fail(error)
            return
        session_ms = _ms(request.session_timeout)
        if (
            not self.settings.min_session_timeout_ms
            <= session_ms
            <= self.settings.max_session_timeout_ms
        ):
            fail(ErrorCode.invalid_session_timeout)
            return
        group = self.groups.get(group_id)
        if group is None:
            if member_id:
                fail(ErrorCode.unknown_member_id)
                return
            group = self.groups[group_id] = ClassicGroup(group_id, state_timestamp=now_ms)
        if group.state is GroupState.DEAD:
            fail(ErrorCode.coordinator_not_available)
            return
        protocols = tuple((p.name, p.metadata) for p in request.protocols)
        if not group.supports_protocols(request.protocol_type, (name for name, _ in protocols)):
            fail(ErrorCode.inconsistent_group_protocol)
            return
        member = GroupMember(
            member_id=member_id,
            group_instance_id=request.group_instance_id,
            client_id=client_id,
            client_host=client_host,
            rebalance_timeout_ms=_ms(request.rebalance_timeout),
            session_timeout_ms=session_ms,
            protocol_type=request.protocol_type,
            protocols=protocols,
            awaiting_join=reply,
        )
        if not member_id:
            self._join_unknown_member(group, member, require_known_member_id, now_ms)
        else:
            self._join_known_member(group, member, now_ms)

    def _join_unknown_member(
        self, group: ClassicGroup, joining: GroupMember, require_known: bool, now_ms: int
    ) -> None:
        reply = joining.awaiting_join
        assert reply is not None
        instance_id = joining.group_instance_id
        known_static = instance_id is not None and instance_id in group.static_members
        if not known_static and group.size >= self.settings.max_size:
            reply(_join_error(ErrorCode.group_max_size_reached, ""))
            return
        joining.member_id = self._new_member_id(joining.client_id)
        if instance_id is not None and known_static:
            self._replace_static_member(group, joining, now_ms)
            return
        if instance_id is None and require_known:
            group.pending_members.add(joining.member_id)
            group_id, member_id = group.group_id, joining.member_id
            self._schedule(
                ("pending", group_id, member_id),
                now_ms + joining.session_timeout_ms,
                lambda now: self._on_pending_expired(group_id, member_id, now),
            )
            reply(_join_error(ErrorCode.member_id_required, joining.member_id))
            return
        self._add_member_and_rebalance(group, joining, now_ms)

    def _on_pending_expired(self, group_id: str, member_id: str, now_ms: int) -> None:
        group = self.groups.get(group_id)
        if group is not None and member_id in group.pending_members:
            group.pending_members.discard(member_id)
            if group.state is GroupState.PREPARING_REBALANCE:
                self._maybe_complete_join(group, now_ms)

    def _join_known_member(self, group: ClassicGroup, joining: GroupMember, now_ms: int) -> None:
        reply = joining.awaiting_join
        assert reply is not None
        member_id = joining.member_id
        if member_id in group.pending_members:
            self._cancel(("pending", group.group_id, member_id))
            self._add_member_and_rebalance(group, joining, now_ms)
            return
        error = check_member(group, member_id, joining.group_instance_id)
        if error is not ErrorCode.none:
            reply(_join_error(error, member_id))
            return
        member = group.members[member_id]
        if group.state is GroupState.EMPTY:
            reply(_join_error(ErrorCode.unknown_member_id, member_id))
            return
        changed = not member.matches(joining.protocols)
        _update_member(member, joining)
        self._schedule_session(group, member, now_ms)
        if group.state is GroupState.PREPARING_REBALANCE:
            self._maybe_complete_join(group, now_ms)
        elif changed or (group.state is GroupState.STABLE and member_id == group.leader_id):
            self._prepare_rebalance(group, now_ms)
        else:  # same metadata: the member missed its answer; the leader gets the members again
            member.awaiting_join = None
            reply(self._join_response(group, member, current_members=member_id == group.leader_id))

    def _add_member_and_rebalance(
        self, group: ClassicGroup, member: GroupMember, now_ms: int
    ) -> None:
        member.is_new = True
        group.add_member(member)
        group_id, member_id = group.group_id, member.member_id
        self._schedule(
            ("session", group_id, member_id),
            now_ms + NEW_MEMBER_JOIN_TIMEOUT_MS,
            lambda now: self._on_session_expired(group_id, member_id, now),
        )
        if group.state is GroupState.PREPARING_REBALANCE:
            if group.initial_join_deadline is not None:
                self._extend_initial_delay(group, now_ms)
            self._maybe_complete_join(group, now_ms)
        else:
            self._prepare_rebalance(group, now_ms)

    def _replace_static_member(
        self, group: ClassicGroup, joining: GroupMember, now_ms: int
    ) -> None:
        """A known group.instance.id rejoins under a new member id: the old id is fenced."""
        instance_id = joining.group_instance_id
        assert instance_id is not None and joining.awaiting_join is not None
        old_id = group.static_members[instance_id]
        old = group.members[old_id]
        if old.awaiting_join is not None:
            old.awaiting_join(_join_error(ErrorCode.fenced_instance_id, old_id))
        if old.awaiting_sync is not None:
            old.awaiting_sync(_sync_response(ErrorCode.fenced_instance_id))
        old.awaiting_join = old.awaiting_sync = None
        self._cancel(("session", group.group_id, old_id))
        changed = not old.matches(joining.protocols)
        member = group.replace_static_member(instance_id, old_id, joining.member_id)
        _update_member(member, joining)
        self._schedule_session(group, member, now_ms)
        if group.state is not GroupState.STABLE or changed:
            if group.state is GroupState.PREPARING_REBALANCE:
                self._maybe_complete_join(group, now_ms)
                return
            self._prepare_rebalance(group, now_ms)
            return
        reply, member.awaiting_join = member.awaiting_join, None
        assert reply is not None
        response = self._join_response(
            group, member, current_members=member.member_id == group.leader_id
        )
        self._store_group(
            group,
            lambda code: reply(
                response if code is ErrorCode.none else _join_error(code, member.member_id)
            ),
        )

    def _prepare_rebalance(self, group: ClassicGroup, now_ms: int) -> None:
        if group.state is GroupState.COMPLETING_REBALANCE:
            self._fail_awaiting_sync(group, ErrorCode.rebalance_in_progress)
        self._cancel(("sync", group.group_id))
        group.pending_sync.clear()
        initial = group.state is GroupState.EMPTY
        group.transition_to(GroupState.PREPARING_REBALANCE, now_ms)
        group_id = group.group_id
        rebalance_ms = group.max_rebalance_timeout_ms()
        if initial and self.settings.initial_rebalance_delay_ms > 0:
            group.initial_join_deadline = now_ms + rebalance_ms
            delay = min(self.settings.initial_rebalance_delay_ms, rebalance_ms)
            deadline = now_ms + delay
        else:
            group.initial_join_deadline = None
            deadline = now_ms + rebalance_ms
        self._schedule(("join", group_id), deadline, lambda now: self._complete_join(group_id, now))
        if group.initial_join_deadline is None:
            self._maybe_complete_join(group, now_ms)

    def _extend_initial_delay(self, group: ClassicGroup, now_ms: int) -> None:
        assert group.initial_join_deadline is not None
        deadline = min(
            now_ms + self.settings.initial_rebalance_delay_ms, group.initial_join_deadline
        )
        group_id = group.group_id
        self._schedule(("join", group_id), deadline, lambda now: self._complete_join(group_id, now))

    def _maybe_complete_join(self, group: ClassicGroup, now_ms: int) -> None:
        if (
            group.state is GroupState.PREPARING_REBALANCE
            and group.initial_join_deadline is None
            and group.all_members_joined()
        ):
            self._cancel(("join", group.group_id))
            self._complete_join(group.group_id, now_ms)

    def _complete_join(self, group_id: str, now_ms: int) -> None:
        group = self.groups.get(group_id)
        if group is None or group.state is not GroupState.PREPARING_REBALANCE:
            return
        self._cancel(("join", group_id))
        group.initial_join_deadline = None
        for member in [m for m in group.members.values() if m.awaiting_join is None]:
            self._cancel(("session", group_id, member.member_id))
            group.remove_member(member.member_id)
        group.generation += 1
        if not group.members:
            group.protocol_name = None
            group.leader_id = None
            group.transition_to(GroupState.EMPTY, now_ms)
            self._store_group(group, lambda code: None)
            return
        group.protocol_name = group.select_protocol()
        group.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        group.pending_sync = set(group.members)
        for member in group.members.values():
            reply, member.awaiting_join = member.awaiting_join, None
            member.is_new = False
            member.assignment = b""
            self._schedule_session(group, member, now_ms)
            assert reply is not None
            reply(
                self._join_response(
                    group, member, current_members=member.member_id == group.leader_id
                )
            )
        generation = group.generation
        self._schedule(
            ("sync", group_id),
            now_ms + group.max_rebalance_timeout_ms(),
            lambda now: self._on_sync_expired(group_id, generation, now),
        )

    def _on_sync_expired(self, group_id: str, generation: int, now_ms: int) -> None:
        """Members that joined but never synced within the rebalance timeout are removed."""
        group = self.groups.get(group_id)
        if group is None or group.generation != generation or not group.pending_sync:
            return
        if not group.is_in(GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
            return
        for member_id in list(group.pending_sync):
            self._cancel(("session", group_id, member_id))
            group.remove_member(member_id)
        self._after_removal(group, now_ms)

    def _join_response(
        self, group: ClassicGroup, member: GroupMember, *, current_members: bool
    ) -> join.JoinGroupResponse:
        from kio.schema.join_group.v9 import response as join  # noqa: PLC0415

        protocol = group.protocol_name or ""
        members = (
            tuple(
                join.JoinGroupResponseMember(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    metadata=m.metadata(protocol),
                )
                for m in group.members.values()
            )
            if current_members
            else ()
        )
        return join.JoinGroupResponse(
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.none,
            generation_id=i32(group.generation),
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=group.leader_id or "",
            skip_assignment=current_members and group.state is GroupState.STABLE,
            member_id=member.member_id,
            members=members,
        )

    def sync_group(
        self,
        request: sync_req.SyncGroupRequest,
        *,
        now_ms: int,
        reply: Reply[sync.SyncGroupResponse],
    ) -> None:
        group_id, member_id = str(request.group_id), request.member_id

        def fail(code: ErrorCode) -> None:
            reply(_sync_response(code))

        error = ErrorCode.invalid_group_id if not group_id else self.group_error(group_id)
        if error is not ErrorCode.none:
            fail(error)
            return
        group = self.groups.get(group_id)
        if group is None or group.state is GroupState.DEAD:
            fail(ErrorCode.unknown_member_id)
            return
        error = check_member(group, member_id, request.group_instance_id)
        if error is ErrorCode.none and request.generation_id != group.generation:
            error = ErrorCode.illegal_generation
        if error is ErrorCode.none and (
            (request.protocol_type is not None and request.protocol_type != group.protocol_type)
            or (request.protocol_name is not None and request.protocol_name != group.protocol_name)
        ):
            error = ErrorCode.inconsistent_group_protocol
        if error is not ErrorCode.none:
            fail(error)
            return
        if group.state is GroupState.EMPTY:
            fail(ErrorCode.unknown_member_id)
            return
        if group.state is GroupState.PREPARING_REBALANCE:
            fail(ErrorCode.rebalance_in_progress)
            return
        member = group.members[member_id]
        self._schedule_session(group, member, now_ms)
        group.pending_sync.discard(member_id)
        if group.state is GroupState.STABLE:
            reply(self._sync_answer(group, member))
            return
        member.awaiting_sync = reply
        if member_id != group.leader_id:
            return
        assignments = {a.member_id: a.assignment for a in request.assignments}
        generation = group.generation

        def stored(code: ErrorCode) -> None:
            if group.generation != generation or group.state is not GroupState.COMPLETING_REBALANCE:
                return
            if code is not ErrorCode.none:
                self._fail_awaiting_sync(group, code)
                self._prepare_rebalance(group, now_ms)
                return
            for m in group.members.values():
                m.assignment = assignments.get(m.member_id, b"")
            group.transition_to(GroupState.STABLE, now_ms)
            for m in group.members.values():
                parked, m.awaiting_sync = m.awaiting_sync, None
                if parked is not None:
                    parked(self._sync_answer(group, m))

        self._store_group(group, stored, assignments=assignments)

    @staticmethod
    def _sync_answer(group: ClassicGroup, member: GroupMember) -> sync.SyncGroupResponse:
        from kio.schema.sync_group.v5 import response as sync  # noqa: PLC0415

        return sync.SyncGroupResponse(
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.none,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            assignment=member.assignment,
        )

    def _fail_awaiting_sync(self, group: ClassicGroup, code: ErrorCode) -> None:
        for member in group.members.values():
            parked, member.awaiting_sync = member.awaiting_sync, None
            if parked is not None:
                parked(_sync_response(code))

    def heartbeat(
        self, request: heartbeat_req.HeartbeatRequest, *, now_ms: int
    ) -> heartbeat.HeartbeatResponse:
        from kio.schema.heartbeat.v4 import response as heartbeat  # noqa: PLC0415

        group_id = str(request.group_id)
        error = ErrorCode.invalid_group_id if not group_id else self.group_error(group_id)
        group = self.groups.get(group_id)
        if error is ErrorCode.none:
            if group is None or group.state in (GroupState.DEAD, GroupState.EMPTY):
                error = ErrorCode.unknown_member_id
            else:
                error = check_member(group, request.member_id, request.group_instance_id)
                if error is ErrorCode.none and request.generation_id != group.generation:
                    error = ErrorCode.illegal_generation
                if error is ErrorCode.none:
                    self._schedule_session(group, group.members[request.member_id], now_ms)
                    if group.state is GroupState.PREPARING_REBALANCE:
                        error = ErrorCode.rebalance_in_progress
        return heartbeat.HeartbeatResponse(throttle_time=NO_THROTTLE, error_code=error)

    def leave_group(
        self, request: leave_req.LeaveGroupRequest, *, now_ms: int
    ) -> leave.LeaveGroupResponse:
        from kio.schema.leave_group.v5 import response as leave  # noqa: PLC0415

        group_id = str(request.group_id)
        error = ErrorCode.invalid_group_id if not group_id else self.group_error(group_id)
        if error is not ErrorCode.none:
            return leave.LeaveGroupResponse(throttle_time=NO_THROTTLE, error_code=error, members=())
        group = self.groups.get(group_id)
        answers: list[leave.MemberResponse] = []
        for identity in request.members:
            if group is None or group.state is GroupState.DEAD:
                code = ErrorCode.unknown_member_id  # no group: none of its members is known
            else:
                code = self._leave_one(
                    group, identity.member_id, identity.group_instance_id, now_ms
                )
            answers.append(
                leave.MemberResponse(
                    member_id=identity.member_id,
                    group_instance_id=identity.group_instance_id,
                    error_code=code,
                )
            )
        return leave.LeaveGroupResponse(
            throttle_time=NO_THROTTLE, error_code=ErrorCode.none, members=tuple(answers)
        )

    def _leave_one(
        self, group: ClassicGroup, member_id: str, instance_id: str | None, now_ms: int
    ) -> ErrorCode:
        if instance_id is not None:
            known = group.static_members.get(instance_id)
            if known is None:
                return ErrorCode.unknown_member_id
            if member_id and member_id != known:
                return ErrorCode.fenced_instance_id
            member_id = known
        elif member_id in group.pending_members:
            group.pending_members.discard(member_id)
            self._cancel(("pending", group.group_id, member_id))
            self._maybe_complete_join(group, now_ms)
            return ErrorCode.none
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.unknown_member_id
        self._remove_member_and_update(group, member, now_ms)
        return ErrorCode.none

    def _remove_member_and_update(
        self, group: ClassicGroup, member: GroupMember, now_ms: int
    ) -> None:
        for parked, response in (
            (member.awaiting_join, _join_error(ErrorCode.unknown_member_id, member.member_id)),
            (member.awaiting_sync, _sync_response(ErrorCode.unknown_member_id)),
        ):
            if parked is not None:
                parked(response)
        member.awaiting_join = member.awaiting_sync = None
        self._cancel(("session", group.group_id, member.member_id))
        group.remove_member(member.member_id)
        self._after_removal(group, now_ms)

    def _after_removal(self, group: ClassicGroup, now_ms: int) -> None:
        if group.state is GroupState.PREPARING_REBALANCE:
            self._maybe_complete_join(group, now_ms)
        elif group.is_in(GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, now_ms)

    # --- records ------------------------------------------------------------------------------

    def _store_group(
        self,
        group: ClassicGroup,
        done: Callable[[ErrorCode], None],
        *,
        assignments: dict[str, bytes] | None = None,
    ) -> None:
        """Write the group's metadata (with ``assignments`` instead of the members' own)."""
        protocol = group.protocol_name
        value = GroupMetadataValue(
            protocol_type=group.protocol_type or "",
            generation=group.generation,
            protocol=protocol,
            leader=group.leader_id,
            current_state_timestamp=group.state_timestamp,
            members=tuple(
                MemberMetadata(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    rebalance_timeout=m.rebalance_timeout_ms,
                    session_timeout=m.session_timeout_ms,
                    subscription=m.metadata(protocol) if protocol is not None else b"",
                    assignment=m.assignment
                    if assignments is None
                    else assignments.get(m.member_id, b""),
                )
                for m in group.members.values()
            ),
        )
        self.write(
            group.group_id, [CoordinatorRecord(GroupMetadataKey(group.group_id), value)], done
        )

    def write(
        self,
        group_id: str,
        records: Sequence[CoordinatorRecord],
        done: Callable[[ErrorCode], None],
        *,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
    ) -> None:
        """Append ``records`` to the group's partition (in a transactional batch of
        ``producer_id`` when one is given); ``done`` hears the outcome."""
        self._writer.append(
            self.partition_of(group_id),
            records,
            done,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
        )


def _ms(value: Any) -> int:
    return (
        int(value.total_seconds() * 1000) if isinstance(value, datetime.timedelta) else int(value)
    )


def check_member(group: ClassicGroup, member_id: str, instance_id: str | None) -> ErrorCode:
    """UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID for a request naming a member, else NONE."""
    if instance_id is not None:
        known = group.static_members.get(instance_id)
        if known is not None and known != member_id:
            return ErrorCode.fenced_instance_id
    if member_id not in group.members:
        return ErrorCode.unknown_member_id
    return ErrorCode.none


def _update_member(member: GroupMember, joining: GroupMember) -> None:
    member.protocols = joining.protocols
    member.rebalance_timeout_ms = joining.rebalance_timeout_ms
    member.session_timeout_ms = joining.session_timeout_ms
    member.client_id = joining.client_id
    member.client_host = joining.client_host
    member.awaiting_join = joining.awaiting_join


def _join_error(code: ErrorCode, member_id: str) -> join.JoinGroupResponse:
    from kio.schema.join_group.v9 import response as join  # noqa: PLC0415

    return join.JoinGroupResponse(
        throttle_time=NO_THROTTLE,
        error_code=code,
        generation_id=i32(NO_GENERATION),
        protocol_type=None,
        protocol_name=None,
        leader="",
        skip_assignment=False,
        member_id=member_id,
        members=(),
    )


def _sync_response(code: ErrorCode) -> sync.SyncGroupResponse:
    from kio.schema.sync_group.v5 import response as sync  # noqa: PLC0415

    return sync.SyncGroupResponse(
        throttle_time=NO_THROTTLE,
        error_code=code,
        protocol_type=None,
        protocol_name=None,
        assignment=b"",
    )
