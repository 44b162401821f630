"""Fetch sessions (KIP-227): what an incremental Fetch may leave out, and the bounded cache of them.

Pure logic: time comes in as ``now_ms``, session ids from a ``RandomSource``; no I/O, no asyncio.
The names and rules are Kafka's (``FetchSession.scala``: ``FetchSessionCache``, ``FetchManager``,
``CachedPartition`` and the four ``FetchContext`` kinds).

What a request's ``(session_id, session_epoch)`` means:

* ``(0, -1)`` sessionless: a full fetch, no session is created;
* ``(0, 0)`` full fetch that asks for a new session: the response carries its id (or 0 when the
  cache has no room and evicts nothing); the client's next request uses epoch 1;
* ``(id, -1)`` closes session ``id``, sessionless full fetch;
* ``(id, 0)`` closes session ``id`` and starts a new full session;
* ``(id, n > 0)`` incremental: the request lists only partitions that are new or whose fetch
  parameters changed, and ``forgotten_topics_data`` those to drop; the broker fetches every
  partition of the session and answers only those that changed (records, high watermark, log
  start offset or an error). An unknown id is FETCH_SESSION_ID_NOT_FOUND, a wrong epoch
  INVALID_FETCH_SESSION_EPOCH, a switch between topic names (v12-) and topic ids (v13+)
  FETCH_SESSION_TOPIC_ID_ERROR; the epoch then advances (wrapping from 2^31-1 to 1). A session
  left with no partitions is closed and the request served sessionless.

Eviction (``FetchSessionCache.try_evict``), when all ``max.incremental.fetch.session.cache.slots``
are taken: the least recently used session if unused for ``eviction_ms``; otherwise the smallest
session created more than ``eviction_ms`` ago, if the new one has more partitions (a follower's
session may also evict any consumer's).
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Final

from strom.common import ErrorCode, RandomSource

__all__ = [
    "DEFAULT_EVICTION_MS",
    "DEFAULT_SESSION_CACHE_SLOTS",
    "FINAL_EPOCH",
    "INITIAL_EPOCH",
    "INVALID_SESSION_ID",
    "ContextKind",
    "FetchContext",
    "FetchSession",
    "FetchSessionCache",
    "PartitionFetch",
    "PartitionOutcome",
    "SessionPartition",
    "next_epoch",
]

INVALID_SESSION_ID: Final = 0
INITIAL_EPOCH: Final = 0
FINAL_EPOCH: Final = -1
DEFAULT_SESSION_CACHE_SLOTS: Final = 1000
"""Kafka's ``max.incremental.fetch.session.cache.slots`` default."""
DEFAULT_EVICTION_MS: Final = 120_000
"""Kafka's ``MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS``."""
_INT32_MAX: Final = 2**31 - 1


def next_epoch(epoch: int) -> int:
    """The session epoch after ``epoch`` (Kafka's ``FetchMetadata.nextEpoch``)."""
    if epoch < 0:
        return FINAL_EPOCH
    if epoch == _INT32_MAX:
        return 1
    return epoch + 1


@dataclass(frozen=True, slots=True, order=True)
class SessionPartition:
    """A partition as a fetch session knows it: by topic id from v13 on, by name before.

    ``topic`` is "" for a topic id the metadata does not know (answered UNKNOWN_TOPIC_ID), and
    ``topic_id`` is None when the request names topics.
    """

    topic: str
    partition: int
    topic_id: uuid.UUID | None = None

    def __str__(self) -> str:
        name = self.topic or str(self.topic_id)
        return f"{name}-{self.partition}"


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionFetch:
    """A partition's parameters in a Fetch request (and in a session's cache)."""

    fetch_offset: int
    partition_max_bytes: int
    current_leader_epoch: int = -1
    log_start_offset: int = -1
    """The follower's log start offset (-1 from consumers)."""
    last_fetched_epoch: int = -1


@dataclass(frozen=True, slots=True, kw_only=True)
class PartitionOutcome:
    """What a partition's read came to, as far as a session compares responses."""

    records_size: int
    high_watermark: int
    log_start_offset: int
    error_code: ErrorCode = ErrorCode.none
    preferred_read_replica: int = -1


@dataclass(slots=True)
class _CachedPartition:
    request: PartitionFetch
    high_watermark: int = -1
    log_start_offset: int = -1

    def must_respond(self, outcome: PartitionOutcome, *, update: bool) -> bool:
        """Kafka's ``CachedPartition.maybeUpdateResponseData``."""
        respond = outcome.records_size > 0 or outcome.preferred_read_replica >= 0
        if self.high_watermark != outcome.high_watermark:
            respond = True
            if update:
                self.high_watermark = outcome.high_watermark
        if self.log_start_offset != outcome.log_start_offset:
            respond = True
            if update:
                self.log_start_offset = outcome.log_start_offset
        if outcome.error_code != ErrorCode.none:
            # Sent every time, and the cached high watermark is made invalid so that the
            # partition is sent again once the error is gone.
            if update:
                self.high_watermark = -1
            respond = True
        return respond


@dataclass(slots=True, eq=False)
class FetchSession:
    """One incremental fetch session: its partitions in fetch order, and its epoch."""

    id: int
    privileged: bool
    uses_topic_ids: bool
    partitions: dict[SessionPartition, _CachedPartition]
    creation_ms: int
    last_used_ms: int
    epoch: int
    cached_size: int = -1
    """The size the cache last accounted for (-1: not in the cache)."""

    @property
    def size(self) -> int:
        return len(self.partitions)

    def update(
        self,
        fetch_data: Sequence[tuple[SessionPartition, PartitionFetch]],
        forgotten: Iterable[SessionPartition],
    ) -> tuple[int, int, int]:
        """Apply an incremental request; returns (added, updated, removed) counts."""
        added = updated = removed = 0
        for key, request in fetch_data:
            cached = self.partitions.get(key)
            if cached is None:
                self.partitions[key] = _CachedPartition(request)
                added += 1
            else:
                cached.request = request
                updated += 1
        for key in forgotten:
            if self.partitions.pop(key, None) is not None:
                removed += 1
        return added, updated, removed

    def _evictable_key(self) -> tuple[bool, int, int]:
        return (self.privileged, self.cached_size, self.id)


class ContextKind(enum.Enum):
    """The four kinds of Kafka's ``FetchContext``."""

    SESSION_ERROR = "session error"
    """The session part of the request is wrong: answer the error and no partitions."""
    SESSIONLESS = "sessionless"
    """A full fetch outside any session (session id 0 in the response)."""
    FULL = "full"
    """A full fetch that creates a session if the cache lets it."""
    INCREMENTAL = "incremental"
    """A fetch of every partition of an existing session; only changes are answered."""


@dataclass(slots=True, eq=False)
class FetchContext:
    """One Fetch request's view of the sessions: what to read, and what to answer.

    Build with :meth:`FetchSessionCache.new_context`; read the partitions of
    :meth:`partitions` in that order; then :meth:`respond` with each partition's outcome (or
    :meth:`throttled` when the answer is left empty).
    """

    kind: ContextKind
    error: ErrorCode
    _cache: FetchSessionCache
    _fetch_data: list[tuple[SessionPartition, PartitionFetch]] = field(default_factory=list)
    _session: FetchSession | None = None
    _request_epoch: int = FINAL_EPOCH
    _privileged: bool = False
    _uses_topic_ids: bool = False

    @property
    def session_id(self) -> int:
        return INVALID_SESSION_ID if self._session is None else self._session.id

    def partitions(self) -> list[tuple[SessionPartition, PartitionFetch]]:
        """The partitions to read and their parameters, in the order to read them."""
        if self.kind is ContextKind.SESSION_ERROR:
            return []
        if self._session is not None:
            return [(key, cached.request) for key, cached in self._session.partitions.items()]
        return list(self._fetch_data)

    def respond(
        self, outcomes: Sequence[tuple[SessionPartition, PartitionOutcome]], *, now_ms: int
    ) -> tuple[ErrorCode, int, list[int]]:
        """The top-level error, the session id to answer and which outcomes to send (indices).

        ``outcomes`` are those of :meth:`partitions`, in the same order. For a full context
        this is where the session is created; for an incremental one, where the cached high
        watermarks and log start offsets are updated and partitions that returned records move
        to the end of the session's order (so every partition gets its turn at the bytes).
        """
        everything = list(range(len(outcomes)))
        if self.kind is ContextKind.SESSION_ERROR:
            return self.error, INVALID_SESSION_ID, []
        if self.kind is ContextKind.SESSIONLESS:
            return ErrorCode.none, INVALID_SESSION_ID, everything
        if self.kind is ContextKind.FULL:
            requests = dict(self._fetch_data)

            def cached_partitions() -> dict[SessionPartition, _CachedPartition]:
                return {
                    key: _CachedPartition(
                        requests[key],
                        high_watermark=outcome.high_watermark,
                        log_start_offset=outcome.log_start_offset,
                    )
                    for key, outcome in outcomes
                }

            session_id = self._cache.maybe_create_session(
                now_ms=now_ms,
                privileged=self._privileged,
                uses_topic_ids=self._uses_topic_ids,
                size=len(outcomes),
                create_partitions=cached_partitions,
            )
            return ErrorCode.none, session_id, everything
        session = self._session
        assert session is not None
        if session.epoch != next_epoch(self._request_epoch):
            # Another request of this session was served in between (a duplicate request).
            return ErrorCode.invalid_fetch_session_epoch, session.id, []
        selected: list[int] = []
        for index, (key, outcome) in enumerate(outcomes):
            cached = session.partitions.get(key)
            if cached is None:
                continue  # forgotten meanwhile
            if cached.must_respond(outcome, update=True):
                selected.append(index)
                if outcome.records_size > 0:
                    del session.partitions[key]
                    session.partitions[key] = cached
        return ErrorCode.none, session.id, selected

    def throttled(self) -> tuple[ErrorCode, int]:
        """The top-level error and session id of an answer a quota leaves empty (Kafka's
        ``getThrottledResponse``): no session is created (session id 0), and an incremental
        session answers its id, or INVALID_FETCH_SESSION_EPOCH after a duplicate request; the
        session's cached partitions are left as they were."""
        session = self._session
        if self.kind is not ContextKind.INCREMENTAL or session is None:
            return ErrorCode.none, INVALID_SESSION_ID
        if session.epoch != next_epoch(self._request_epoch):
            return ErrorCode.invalid_fetch_session_epoch, session.id
        return ErrorCode.none, session.id


class FetchSessionCache:
    """At most ``max_slots`` sessions, evicted as Kafka does (see the module doc)."""

    def __init__(
        self,
        *,
        random: RandomSource,
        max_slots: int = DEFAULT_SESSION_CACHE_SLOTS,
        eviction_ms: int = DEFAULT_EVICTION_MS,
    ) -> None:
        if max_slots < 0:
            raise ValueError(f"max_slots must not be negative, got {max_slots}")
        self._random = random
        self._max_slots = max_slots
        self._eviction_ms = eviction_ms
        self._sessions: dict[int, FetchSession] = {}
        self.evictions = 0

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, session_id: int) -> FetchSession | None:
        return self._sessions.get(session_id)

    @property
    def total_partitions(self) -> int:
        return sum(session.size for session in self._sessions.values())

    # --- contexts --------------------------------------------------------------------------

    def new_context(
        self,
        *,
        session_id: int,
        epoch: int,
        fetch_data: Sequence[tuple[SessionPartition, PartitionFetch]],
        forgotten: Sequence[SessionPartition],
        uses_topic_ids: bool,
        now_ms: int,
        privileged: bool = False,
    ) -> FetchContext:
        """Kafka's ``FetchManager.newContext``: the context for one Fetch request."""
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            if session_id != INVALID_SESSION_ID:
                # Any session named by a full fetch request is closed.
                self.remove(session_id)
            kind = ContextKind.SESSIONLESS if epoch == FINAL_EPOCH else ContextKind.FULL
            return FetchContext(
                kind,
                ErrorCode.none,
                self,
                list(fetch_data),
                _privileged=privileged,
                _uses_topic_ids=uses_topic_ids,
            )
        session = self._sessions.get(session_id)
        if session is None:
            return FetchContext(
                ContextKind.SESSION_ERROR, ErrorCode.fetch_session_id_not_found, self
            )
        if session.epoch != epoch:
            return FetchContext(
                ContextKind.SESSION_ERROR, ErrorCode.invalid_fetch_session_epoch, self
            )
        if session.uses_topic_ids != uses_topic_ids:
            return FetchContext(
                ContextKind.SESSION_ERROR, ErrorCode.fetch_session_topic_id_error, self
            )
        session.update(fetch_data, forgotten)
        if not session.partitions:
            self.remove(session.id)
            return FetchContext(ContextKind.SESSIONLESS, ErrorCode.none, self, list(fetch_data))
        self.touch(session, now_ms)
        session.epoch = next_epoch(session.epoch)
        return FetchContext(
            ContextKind.INCREMENTAL,
            ErrorCode.none,
            self,
            _session=session,
            _request_epoch=epoch,
            _uses_topic_ids=uses_topic_ids,
        )

    # --- the cache -------------------------------------------------------------------------

    def maybe_create_session(
        self,
        *,
        now_ms: int,
        privileged: bool,
        uses_topic_ids: bool,
        size: int,
        create_partitions: Callable[[], dict[SessionPartition, _CachedPartition]],
    ) -> int:
        """A new session's id, or INVALID_SESSION_ID when there is no room for it."""
        if len(self._sessions) >= self._max_slots and not self.try_evict(
            privileged=privileged, size=size, now_ms=now_ms
        ):
            return INVALID_SESSION_ID
        session = FetchSession(
            id=self._new_session_id(),
            privileged=privileged,
            uses_topic_ids=uses_topic_ids,
            partitions=create_partitions(),
            creation_ms=now_ms,
            last_used_ms=now_ms,
            epoch=next_epoch(INITIAL_EPOCH),
        )
        self._sessions[session.id] = session
        self.touch(session, now_ms)
        return session.id

    def try_evict(self, *, privileged: bool, size: int, now_ms: int) -> bool:
        """Make room for a session of ``size`` partitions, if the rules allow; True if done."""
        if not self._sessions:
            return False
        oldest = min(self._sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now_ms - oldest.last_used_ms > self._eviction_ms:
            self.remove(oldest.id)
            self.evictions += 1
            return True
        candidates = [
            session
            for session in self._sessions.values()
            if now_ms - session.creation_ms > self._eviction_ms
            or (privileged and not session.privileged)
        ]
        if not candidates:
            return False
        victim = min(candidates, key=FetchSession._evictable_key)
        if (privileged, size, 0) < victim._evictable_key():
            return False
        self.remove(victim.id)
        self.evictions += 1
        return True

    def remove(self, session_id: int) -> FetchSession | None:
        session = self._sessions.pop(session_id, None)
        if session is not None:
            session.cached_size = -1
        return session

    def touch(self, session: FetchSession, now_ms: int) -> None:
        session.last_used_ms = now_ms
        session.cached_size = session.size

    def _new_session_id(self) -> int:
        while True:
            session_id = 1 + self._random.randrange(_INT32_MAX - 1)
            if session_id not in self._sessions:
                return session_id
