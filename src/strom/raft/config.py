"""The quorum's timing settings, as plain values (the shell reads them from Kafka's
``controller.quorum.*`` settings; the core never sees setting names)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RaftConfig"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RaftConfig:
    election_timeout_ms: int = 1000
    """A voter that hears of no leader for a random time in [t, 2t) stands for election."""
    fetch_timeout_ms: int = 2000
    """A follower whose fetches the leader has not answered this long looks for a new one;
    a leader that a majority has not fetched from in 1.5 times this resigns (check quorum)."""
    election_backoff_max_ms: int = 1000
    """Longest random wait after a lost election before the next one."""
    closed_leader_delay_max_ms: int = 200
    """A voter whose connection to its leader closed asks for pre-votes after a random time
    below this (``pre_vote``), instead of waiting out the fetch timeout."""
    request_timeout_ms: int = 2000
    """A request not answered this long counts as failed."""
    retry_backoff_ms: int = 20
    """Wait after a failed request before sending the next to the same node."""
    fetch_max_wait_ms: int = 500
    """How long a leader may hold a fetch that has nothing new (long poll)."""
    fetch_max_bytes: int = 8 * 1024 * 1024
    snapshot_chunk_bytes: int = 1024 * 1024
    """Largest chunk of a snapshot one FetchSnapshot answer carries."""
