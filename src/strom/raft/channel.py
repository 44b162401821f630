"""How the core talks to other nodes without doing I/O: it hands requests to a ``Channel`` and
is handed what arrives (``RaftClient.handle_request`` / ``handle_response``).

The shell (``strom.server.raft.raft_manager``) sends over TCP; the simulation delivers in memory,
with
the drops, delays and partitions it chooses. Either way a response is matched to its request by
the channel and given back with it; a request that fails (no connection, no answer in time, a
partition) comes back with ``body=None``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from kio.static.protocol import RequestPayload, ResponsePayload

__all__ = ["Channel", "InboundRequest", "InboundResponse", "OutboundRequest"]


@dataclass(frozen=True, slots=True)
class OutboundRequest:
    destination: int
    body: RequestPayload


@dataclass(frozen=True, slots=True)
class InboundRequest:
    ref: object
    """The channel's handle to answer it with (``Channel.respond``)."""
    source: int | None
    """The sender's node id when the channel knows it (requests name their sender anyway)."""
    body: RequestPayload


@dataclass(frozen=True, slots=True)
class InboundResponse:
    source: int
    request: RequestPayload
    body: ResponsePayload | None
    """None: the request failed (no connection, no answer in time)."""


class Channel(Protocol):
    def send(self, request: OutboundRequest) -> None:
        """Send, and later call ``handle_response`` with the answer (or the failure)."""
        ...

    def respond(self, ref: object, body: ResponsePayload) -> None:
        """Answer an inbound request (now, or later for a long poll)."""
        ...
