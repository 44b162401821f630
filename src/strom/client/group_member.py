"""A member of a classic group with a protocol of its own (Kafka Connect's ``connect``, a schema
registry's ``sr``): FindCoordinator, JoinGroup (KIP-394's second join with the member id the
coordinator hands out), SyncGroup with the leader's assignments, Heartbeat and LeaveGroup, on
one blocking connection to the coordinator. What the metadata and assignments mean is the
caller's: ``join`` takes the metadata and a function the leader computes the assignments with.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta

from kio.schema.errors import ErrorCode
from kio.schema.find_coordinator.v3.request import FindCoordinatorRequest
from kio.schema.heartbeat.v3.request import HeartbeatRequest
from kio.schema.join_group.v5.request import JoinGroupRequest, JoinGroupRequestProtocol
from kio.schema.leave_group.v3.request import LeaveGroupRequest, MemberIdentity
from kio.schema.sync_group.v3.request import SyncGroupRequest, SyncGroupRequestAssignment
from kio.schema.types import GroupId
from kio.static.primitive import i32, i32Timedelta

from strom.client.blocking import BrokerConnection, parse_servers
from strom.client.security import PLAINTEXT, ClientSecurity

__all__ = ["Assign", "GroupMember", "GroupMemberError", "Joined", "RejoinNeeded"]

Assign = Callable[[str, Mapping[str, bytes]], Mapping[str, bytes]]
"""The leader's assignor: (protocol chosen, each member's metadata) -> each member's assignment."""

_RETRY_S = 0.2
_REJOIN = {
    ErrorCode.rebalance_in_progress,
    ErrorCode.illegal_generation,
    ErrorCode.unknown_member_id,
    ErrorCode.fenced_instance_id,
}
_RECONNECT = {
    ErrorCode.not_coordinator,
    ErrorCode.coordinator_not_available,
    ErrorCode.coordinator_load_in_progress,
}


class GroupMemberError(RuntimeError):
    """The coordinator refused the member for good (an inconsistent protocol, authorization)."""


class RejoinNeeded(Exception):
    """The group is rebalancing or no longer knows this member: join again."""


@dataclass(frozen=True)
class Joined:
    """One generation of the group, as this member saw it."""

    generation: int
    member_id: str
    leader: str
    protocol: str
    assignment: bytes

    @property
    def is_leader(self) -> bool:
        return self.leader == self.member_id


class GroupMember:
    """This process's membership of ``group_id``; not thread-safe (one thread drives it)."""

    def __init__(
        self,
        bootstrap_servers: str,
        *,
        group_id: str,
        protocol_type: str,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        timeout: float,
        client_id: str = "strom",
        security: ClientSecurity = PLAINTEXT,
    ) -> None:
        self.group_id = group_id
        self.protocol_type = protocol_type
        self.member_id = ""
        self.generation = -1
        self._servers = parse_servers(bootstrap_servers)
        self._session = session_timeout_ms
        self._rebalance = rebalance_timeout_ms
        self._timeout = timeout
        self._client_id = client_id
        self._security = security
        self._coordinator: BrokerConnection | None = None

    def close(self) -> None:
        if self._coordinator is not None:
            self._coordinator.close()
            self._coordinator = None

    def join(self, protocols: Mapping[str, bytes], assign: Assign) -> Joined:
        """Join (or rejoin) the group and return this member's part of the new generation; the
        member the coordinator picks as leader assigns with ``assign``. Retries what is worth
        retrying until ``timeout``; raises :class:`RejoinNeeded` when the group moved on during
        the sync, :class:`GroupMemberError` for a refusal."""
        deadline = time.monotonic() + self._timeout + self._rebalance / 1000
        while True:
            try:
                return self._join_once(protocols, assign)
            except (OSError, _Retry) as error:
                if isinstance(error, OSError) or error.reconnect:
                    self.close()
                if time.monotonic() > deadline:
                    raise GroupMemberError(f"cannot join group {self.group_id}: {error}") from None
                time.sleep(_RETRY_S)

    def _join_once(self, protocols: Mapping[str, bytes], assign: Assign) -> Joined:
        coordinator = self._connection()
        request = JoinGroupRequest(
            group_id=GroupId(self.group_id),
            session_timeout=i32Timedelta.parse(timedelta(milliseconds=self._session)),
            rebalance_timeout=i32Timedelta.parse(timedelta(milliseconds=self._rebalance)),
            member_id=self.member_id,
            protocol_type=self.protocol_type,
            protocols=tuple(
                JoinGroupRequestProtocol(name=name, metadata=metadata)
                for name, metadata in protocols.items()
            ),
        )
        joined = coordinator.request(request)
        if joined.error_code == ErrorCode.member_id_required:
            self.member_id = joined.member_id
            raise _Retry("the coordinator gave a member id", reconnect=False)
        if joined.error_code == ErrorCode.unknown_member_id:
            self.member_id = ""
        _check(joined.error_code, "join")
        self.member_id, self.generation = joined.member_id, int(joined.generation_id)
        assignments: tuple[SyncGroupRequestAssignment, ...] = ()
        if joined.leader == joined.member_id:
            given = assign(joined.protocol_name, {m.member_id: m.metadata for m in joined.members})
            assignments = tuple(
                SyncGroupRequestAssignment(member_id=member, assignment=data)
                for member, data in given.items()
            )
        synced = coordinator.request(
            SyncGroupRequest(
                group_id=GroupId(self.group_id),
                generation_id=i32(self.generation),
                member_id=self.member_id,
                assignments=assignments,
            )
        )
        if synced.error_code in _REJOIN:
            raise RejoinNeeded(synced.error_code.name)
        _check(synced.error_code, "sync")
        return Joined(
            self.generation,
            self.member_id,
            joined.leader,
            joined.protocol_name,
            synced.assignment,
        )

    def heartbeat(self) -> None:
        """One heartbeat; :class:`RejoinNeeded` when the group rebalances or forgot this
        member (a member the coordinator no longer knows starts over with a new id)."""
        try:
            answer = self._connection().request(
                HeartbeatRequest(
                    group_id=GroupId(self.group_id),
                    generation_id=i32(self.generation),
                    member_id=self.member_id,
                )
            )
        except OSError as error:
            self.close()
            raise RejoinNeeded(f"the coordinator is unreachable: {error}") from None
        if answer.error_code in (ErrorCode.unknown_member_id, ErrorCode.illegal_generation):
            if answer.error_code == ErrorCode.unknown_member_id:
                self.member_id = ""
            raise RejoinNeeded(answer.error_code.name)
        if answer.error_code == ErrorCode.rebalance_in_progress:
            raise RejoinNeeded(answer.error_code.name)
        if answer.error_code in _RECONNECT:
            self.close()
            raise RejoinNeeded(answer.error_code.name)

    def leave(self) -> None:
        """Leave the group, so it rebalances at once instead of after the session timeout."""
        if not self.member_id:
            return
        with contextlib.suppress(OSError):  # else the session timeout does it, later
            self._connection().request(
                LeaveGroupRequest(
                    group_id=GroupId(self.group_id),
                    members=(MemberIdentity(member_id=self.member_id),),
                )
            )
        self.member_id, self.generation = "", -1

    def _connection(self) -> BrokerConnection:
        if self._coordinator is None:
            host, port = self._find_coordinator()
            self._coordinator = BrokerConnection(
                host,
                port,
                timeout=self._timeout + self._rebalance / 1000,
                client_id=self._client_id,
                security=self._security,
            )
        return self._coordinator

    def _find_coordinator(self) -> tuple[str, int]:
        last: Exception | None = None
        for host, port in self._servers:
            try:
                with BrokerConnection(
                    host,
                    port,
                    timeout=self._timeout,
                    client_id=self._client_id,
                    security=self._security,
                ) as connection:
                    answer = connection.request(FindCoordinatorRequest(key=self.group_id))
            except OSError as error:
                last = error
                continue
            _check(answer.error_code, "find the coordinator")
            return str(answer.host), int(answer.port)
        raise last or OSError("no broker to ask")


class _Retry(Exception):
    def __init__(self, reason: str, *, reconnect: bool) -> None:
        super().__init__(reason)
        self.reconnect = reconnect


def _check(code: ErrorCode, step: str) -> None:
    if code == ErrorCode.none:
        return
    if code in _RECONNECT or code in _REJOIN or code.retriable:
        raise _Retry(f"{step}: {code.name.upper()}", reconnect=code in _RECONNECT)
    raise GroupMemberError(f"cannot {step} the group: {code.name.upper()}")
