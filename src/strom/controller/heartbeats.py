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


class BrokerSessions:
    def __init__(self, *, session_timeout_ms: int) -> None:
        self.session_timeout_ms = session_timeout_ms
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
        return (
            session is not None
            and session.heard
            and now_ms - session.last_contact_ms < self.session_timeout_ms
        )

    def heartbeat(self, broker_id: int, *, epoch: int, metadata_offset: int, now_ms: int) -> bool:
        """Record a heartbeat of the broker's session ``epoch``; returns whether it has caught
        up with its registration. A heartbeat of another epoch than the known one is ignored."""
        session = self._sessions.get(broker_id)
        if session is None or session.epoch != epoch:
            return False
        session.last_contact_ms = now_ms
        session.heard = True
        session.metadata_offset = max(session.metadata_offset, metadata_offset)
        return session.metadata_offset >= session.registration_offset

    def expired(self, now_ms: int, image: MetadataImage) -> list[tuple[int, int]]:
        """(broker id, epoch) of the unfenced brokers whose session ran out."""
        out: list[tuple[int, int]] = []
        for broker_id, broker in sorted(image.cluster.brokers.items()):
            session = self._sessions.get(broker_id)
            if broker.fenced:
                continue
            if session is None or now_ms - session.last_contact_ms >= self.session_timeout_ms:
                out.append((broker_id, broker.epoch))
        return out

    def next_expiry_ms(self, image: MetadataImage) -> int | None:
        """When the earliest session of an unfenced broker runs out (None: none can)."""
        deadlines = [
            session.last_contact_ms + self.session_timeout_ms
            for broker_id, session in self._sessions.items()
            if (broker := image.cluster.broker(broker_id)) is not None and not broker.fenced
        ]
        return min(deadlines, default=None)
