"""A worker's membership of its ``group.id``, as Kafka Connect's: the workers join one group
through the group coordinator with protocol type ``connect`` (protocol ``compatible``), each
with its REST URL, how far it read the config topic and what it runs as metadata
(``strom.connect.protocol``); the leader assigns the connectors (``strom.connect.assignor``)
and every worker runs its part (``Herder.assign``). A worker that stops leaves the group; one
killed is dropped by the coordinator after ``session.timeout.ms``; either way the group
rebalances and the others take over its connectors. The leader joins again whenever a
connector is created or deleted, so that the new one is assigned."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping

from strom.client.group_member import GroupMember, GroupMemberError, Joined, RejoinNeeded
from strom.client.security import librdkafka_security
from strom.connect.assignor import assign
from strom.connect.errors import ConnectError
from strom.connect.herder import Herder
from strom.connect.protocol import (
    COMPATIBLE,
    CONFIG_MISMATCH,
    PROTOCOL_TYPE,
    Assignment,
    ProtocolError,
    WorkerState,
    decode_assignment,
    decode_metadata,
    encode_assignment,
    encode_metadata,
)
from strom.connect.settings import WorkerSettings

__all__ = ["Membership"]

log = logging.getLogger(__name__)

RETRY_S = 1.0


class Membership:
    """Keeps ``herder`` in the group from a thread of its own."""

    def __init__(self, settings: WorkerSettings, herder: Herder, *, url: str) -> None:
        self.url = url
        self._herder = herder
        self._settings = settings
        self._member = GroupMember(
            settings.bootstrap_servers,
            group_id=settings.group_id,
            protocol_type=PROTOCOL_TYPE,
            session_timeout_ms=settings.session_timeout_ms,
            rebalance_timeout_ms=settings.rebalance_timeout_ms,
            timeout=settings.timeout,
            client_id=f"connect-{url}",
            security=librdkafka_security(settings.client_config()),
        )
        self._running = Assignment()
        """What this worker runs, as its metadata tells the leader."""
        self._rejoin = threading.Event()
        self._stopping = threading.Event()
        self._assigned = threading.Event()
        self._owners: dict[str, str] = {}
        """The leader's: the URL of the worker each connector is assigned to."""
        self._thread = threading.Thread(target=self._run, name="connect-group", daemon=True)
        herder.on_connectors_changed = self._rejoin.set

    def start(self) -> None:
        """Join the group and wait (up to the worker's timeout) for the first assignment."""
        self._thread.start()
        wait = self._settings.timeout + self._settings.rebalance_timeout_ms / 1000
        if not self._assigned.wait(wait):
            log.warning("no assignment from group %s yet", self._settings.group_id)
        self._herder.follow()

    def stop(self) -> None:
        """Stop the connectors and leave the group."""
        self._stopping.set()
        self._rejoin.set()
        self._thread.join(timeout=self._settings.timeout)

    def _run(self) -> None:
        try:
            while not self._stopping.is_set():
                joined = self._join()
                if joined is None:
                    continue
                self._serve(joined)
        finally:
            self._herder.stop_queries()
            self._member.leave()
            self._member.close()

    def _join(self) -> Joined | None:
        """One round: join, then stop what the assignment revokes and note what it gives;
        None when the round must be tried again."""
        self._rejoin.clear()
        metadata = WorkerState(self.url, self._herder.config_offset(), self._running)
        try:
            joined = self._member.join({COMPATIBLE: encode_metadata(metadata)}, self._assign)
            assignment = decode_assignment(joined.assignment)
            if assignment.error == CONFIG_MISMATCH:
                log.info("the leader read the config topic less far than this worker")
                self._herder.read_configs()
                return None
            self._herder.assign(
                assignment,
                generation=joined.generation,
                is_leader=joined.is_leader,
                owner_urls=self._owners if joined.is_leader else {},
            )
        except RejoinNeeded:
            return None
        except (GroupMemberError, OSError, ConnectError, ProtocolError) as error:
            # a refusal, no coordinator, the config topic not read as far as the leader's
            # within the timeout, or an assignment that is not Connect's
            log.warning("group %s: %s; joining again", self._settings.group_id, error)
            self._stopping.wait(RETRY_S)
            return None
        self._running = Assignment(
            leader=assignment.leader,
            leader_url=assignment.leader_url,
            config_offset=assignment.config_offset,
            connectors=assignment.connectors,
            tasks=assignment.tasks,
        )
        self._assigned.set()
        if assignment.revoked_connectors:
            self._rejoin.set()  # it stopped them: the next round hands them to others
        return joined

    def _serve(self, joined: Joined) -> None:
        """Heartbeat until the group rebalances, this worker wants a new assignment, or stops."""
        interval = self._settings.heartbeat_interval_ms / 1000
        while not self._rejoin.is_set():
            try:
                self._member.heartbeat()
            except RejoinNeeded as why:
                log.info("group %s: %s; joining again", self._settings.group_id, why)
                if not self._member.member_id:  # the group dropped this worker: others run
                    self._herder.unassign()  # its connectors now, so stop them first
                    self._running = Assignment()
                return
            self._rejoin.wait(interval)

    def _assign(self, protocol: str, metadata: Mapping[str, bytes]) -> dict[str, bytes]:
        """The leader's part: read the config topic to its end, then assign."""
        members = {member: decode_metadata(data) for member, data in metadata.items()}
        self._herder.read_configs()
        leader = self._member.member_id
        assignments = assign(
            members,
            self._herder.task_counts(),
            leader=leader,
            config_offset=self._herder.config_offset(),
        )
        self._owners = {
            name: members[member].url
            for member, given in assignments.items()
            for name in given.connectors
        }
        log.info("assigned %d connector(s) to %d worker(s)", len(self._owners), len(assignments))
        return {member: encode_assignment(given) for member, given in assignments.items()}
