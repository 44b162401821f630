"""Broker sessions as the active controller sees them (Kafka's ``BrokerHeartbeatManager``).

Kept in memory on the active controller only, never in the metadata log: when a broker last
heartbeated, the metadata offset it reported, and the offset of its registration record. An
unfenced broker whose session (``broker.session.timeout.ms``) ran out is fenced by the caller;
a broker is caught up once the metadata offset it reports has reached its registration record.

A controller that becomes active knows nothing of earlier heartbeats: :meth:`activate` gives every
registered broker a fresh session from that moment, as Kafka does, so that a controller failover
fences nobody who keeps heartbeating. Unlike Kafka, such a session does not count as alive for a
registration of another incarnation until the broker has heartbeated to this controller: a broker
restarted after a crash registers at once instead of waiting out the session of its dead self.

Fast fencing (strom's own, ``broker.heartbeat.connection.close.grace.ms``): the connection a
broker last heartbeated on closing is an input (:meth:`connection_closed`), and so is what the
shell learns when it then tries the broker's listeners (:meth:`listeners_refused`,
:meth:`listeners_answered`). A process that dies has its connections closed and its listening
sockets shut by its kernel at once, so a broker whose heartbeat connection closed and whose
listeners all refuse connections is dead: its session runs out the grace after the close (or at
the refusal, if later), not a whole session timeout after its last heartbeat. A live broker, even
one too slow to heartbeat again within the grace (or stopped), has a kernel that accepts on its
listeners, and keeps the normal session; so does a broker behind a network partition, which
closes nothing and answers nothing. A heartbeat on any connection ends the grace.
"""

from __future__ import annotations

from dataclasses import dataclass

from strom.metadata import MetadataImage

__all__ = ["BrokerSessions"]


@dataclass(slots=True)
class _Session:
    epoch: int
    last_contact_ms: int
    registration_offset: int
    metadata_offset: int = -1
    heard: bool = True
    """The broker has registered or heartbeated since this controller became active."""
    connection: str | None = None
    """The connection of the last heartbeat (None: not known, or not a network one)."""
    closed_ms: int | None = None
    """When that connection closed (None: it has not, or a heartbeat came since)."""
    refused_ms: int | None = None
    """When the broker's listeners were found refusing connections after that close (None:
    not found, or a heartbeat or an accepted connection came since)."""


class BrokerSessions:
    def __init__(self, *, session_timeout_ms: int, close_grace_ms: int | None = None) -> None:
        """``close_grace_ms``: how long after its heartbeat connection closed a silent broker
        whose listeners refuse connections has its session run out (None: only the session
        timeout counts)."""
        self.session_timeout_ms = session_timeout_ms
        self.close_grace_ms = close_grace_ms
        self._sessions: dict[int, _Session] = {}

    def activate(self, image: MetadataImage, now_ms: int) -> None:
        """Start over as the new active controller: a fresh session for every broker, each
        caught up once it reports the offset of the image it was activated with."""
        self._sessions = {
            broker_id: _Session(broker.epoch, now_ms, image.highest_offset, heard=False)
            for broker_id, broker in image.cluster.brokers.items()
        }

    def registered(
        self, broker_id: int, *, epoch: int, registration_offset: int, now_ms: int
    ) -> None:
        """A broker registered (its record is at ``registration_offset``)."""
        self._sessions[broker_id] = _Session(epoch, now_ms, registration_offset)

    def is_alive(self, broker_id: int, now_ms: int) -> bool:
        """The broker has a session this controller heard from, and it has not run out."""
        session = self._sessions.get(broker_id)
        return session is not None and session.heard and now_ms < self._deadline(session)

    def heartbeat(
        self,
        broker_id: int,
        *,
        epoch: int,
        metadata_offset: int,
        now_ms: int,
        connection: str | None = None,
    ) -> bool:
        """Record a heartbeat of the broker's session ``epoch`` that came on ``connection``;
        returns whether it has caught up with its registration. A heartbeat of another epoch
        than the known one is ignored."""
        session = self._sessions.get(broker_id)
        if session is None or session.epoch != epoch:
            return False
        session.last_contact_ms = now_ms
        session.heard = True
        session.connection = connection
        session.closed_ms = None
        session.refused_ms = None
        session.metadata_offset = max(session.metadata_offset, metadata_offset)
        return session.metadata_offset >= session.registration_offset

    def connection_closed(self, connection: str, now_ms: int) -> list[int]:
        """``connection`` closed: the brokers whose last heartbeat came on it, whose listeners
        the caller should now try (:meth:`listeners_refused`, :meth:`listeners_answered`)."""
        if self.close_grace_ms is None:
            return []
        closed = []
        for broker_id, session in sorted(self._sessions.items()):
            if session.connection == connection and session.closed_ms is None:
                session.closed_ms = now_ms
                closed.append(broker_id)
        return closed

    def connection_lost(self, broker_id: int) -> bool:
        """Whether the broker's heartbeat connection closed after its last heartbeat."""
        session = self._sessions.get(broker_id)
        return session is not None and session.closed_ms is not None

    def listeners_refused(self, broker_id: int, now_ms: int) -> None:
        """Every listener of the broker refused a connection at ``now_ms``, after its heartbeat
        connection closed: its process is gone, and its session runs out at the end of the
        grace (at once if the grace is over)."""
        session = self._sessions.get(broker_id)
        if session is not None and session.closed_ms is not None:
            session.refused_ms = now_ms

    def listeners_answered(self, broker_id: int) -> None:
        """A listener of the broker accepted a connection: its process is alive (a refusal seen
        before is forgotten), and only the session timeout counts."""
        session = self._sessions.get(broker_id)
        if session is not None:
            session.refused_ms = None

    def _deadline(self, session: _Session) -> int:
        deadline = session.last_contact_ms + self.session_timeout_ms
        if (
            session.closed_ms is not None
            and session.refused_ms is not None
            and self.close_grace_ms is not None
        ):
            fast = max(session.closed_ms + self.close_grace_ms, session.refused_ms)
            return min(deadline, fast)
        return deadline

    def expired(self, now_ms: int, image: MetadataImage) -> list[tuple[int, int]]:
        """(broker id, epoch) of the unfenced brokers whose session ran out."""
        out: list[tuple[int, int]] = []
        for broker_id, broker in sorted(image.cluster.brokers.items()):
            session = self._sessions.get(broker_id)
            if broker.fenced:
                continue
            if session is None or now_ms >= self._deadline(session):
                out.append((broker_id, broker.epoch))
        return out

    def next_expiry_ms(self, image: MetadataImage) -> int | None:
        """When the earliest session of an unfenced broker runs out (None: none can)."""
        deadlines = [
            self._deadline(session)
            for broker_id, session in self._sessions.items()
            if (broker := image.cluster.broker(broker_id)) is not None and not broker.fenced
        ]
        return min(deadlines, default=None)
