"""Fetch sessions (KIP-227) as Kafka's FetchSession.scala defines them: pure logic."""

from __future__ import annotations

import random
import uuid
from collections.abc import Sequence

from strom.common import ErrorCode
from strom.server.replica.fetch_session import (
    FINAL_EPOCH,
    INITIAL_EPOCH,
    INVALID_SESSION_ID,
    ContextKind,
    FetchContext,
    FetchSessionCache,
    PartitionFetch,
    PartitionOutcome,
    SessionPartition,
    next_epoch,
)

A0 = SessionPartition("a", 0)
A1 = SessionPartition("a", 1)
B0 = SessionPartition("b", 0)


def fetch(offset: int = 0, max_bytes: int = 1024) -> PartitionFetch:
    return PartitionFetch(fetch_offset=offset, partition_max_bytes=max_bytes)


def outcome(
    *, size: int = 0, hw: int = 10, lso: int = 0, error: ErrorCode = ErrorCode.none
) -> PartitionOutcome:
    return PartitionOutcome(
        records_size=size, high_watermark=hw, log_start_offset=lso, error_code=error
    )


def cache(slots: int = 10, eviction_ms: int = 1000) -> FetchSessionCache:
    return FetchSessionCache(random=random.Random(7), max_slots=slots, eviction_ms=eviction_ms)


def context(
    sessions: FetchSessionCache,
    session_id: int,
    epoch: int,
    data: Sequence[tuple[SessionPartition, PartitionFetch]] = (),
    forgotten: Sequence[SessionPartition] = (),
    *,
    now_ms: int = 0,
    uses_topic_ids: bool = False,
    privileged: bool = False,
) -> FetchContext:
    return sessions.new_context(
        session_id=session_id,
        epoch=epoch,
        fetch_data=data,
        forgotten=forgotten,
        uses_topic_ids=uses_topic_ids,
        now_ms=now_ms,
        privileged=privileged,
    )


def respond_all(
    ctx: FetchContext, outcomes: dict[SessionPartition, PartitionOutcome], now_ms: int = 0
) -> tuple[ErrorCode, int, list[SessionPartition]]:
    keys = [key for key, _ in ctx.partitions()]
    error, session_id, selected = ctx.respond([(k, outcomes[k]) for k in keys], now_ms=now_ms)
    return error, session_id, [keys[i] for i in selected]


def open_session(
    sessions: FetchSessionCache,
    keys: Sequence[SessionPartition],
    *,
    now_ms: int = 0,
    uses_topic_ids: bool = False,
    privileged: bool = False,
) -> int:
    ctx = context(
        sessions,
        0,
        INITIAL_EPOCH,
        [(k, fetch()) for k in keys],
        now_ms=now_ms,
        uses_topic_ids=uses_topic_ids,
        privileged=privileged,
    )
    assert ctx.kind is ContextKind.FULL
    error, session_id, selected = respond_all(ctx, {k: outcome() for k in keys}, now_ms)
    assert error == ErrorCode.none
    assert selected == list(keys)
    return session_id


def test_next_epoch() -> None:
    assert next_epoch(0) == 1
    assert next_epoch(41) == 42
    assert next_epoch(2**31 - 1) == 1
    assert next_epoch(-1) == FINAL_EPOCH


def test_sessionless_fetch_creates_nothing() -> None:
    sessions = cache()
    ctx = context(sessions, 0, FINAL_EPOCH, [(A0, fetch(5)), (B0, fetch(7))])
    assert ctx.kind is ContextKind.SESSIONLESS
    assert ctx.partitions() == [(A0, fetch(5)), (B0, fetch(7))]
    error, session_id, selected = respond_all(ctx, {A0: outcome(), B0: outcome()})
    assert (error, session_id, selected) == (ErrorCode.none, INVALID_SESSION_ID, [A0, B0])
    assert len(sessions) == 0


def test_full_fetch_creates_a_session_at_epoch_1() -> None:
    sessions = cache()
    session_id = open_session(sessions, [A0, A1])
    assert session_id != INVALID_SESSION_ID
    session = sessions.get(session_id)
    assert session is not None
    assert session.epoch == 1
    assert list(session.partitions) == [A0, A1]
    assert sessions.total_partitions == 2


def test_incremental_fetch_answers_only_changes() -> None:
    sessions = cache()
    session_id = open_session(sessions, [A0, A1, B0])
    ctx = context(sessions, session_id, 1)
    assert ctx.kind is ContextKind.INCREMENTAL
    assert [key for key, _ in ctx.partitions()] == [A0, A1, B0]
    # A0 got records, A1's high watermark moved, B0 is unchanged.
    error, answered_id, selected = respond_all(
        ctx, {A0: outcome(size=100, hw=10), A1: outcome(hw=11), B0: outcome(hw=10)}
    )
    assert (error, answered_id) == (ErrorCode.none, session_id)
    assert selected == [A0, A1]
    # A0 returned data: it moves to the end of the order, so the others get the bytes first.
    assert [key for key, _ in context(sessions, session_id, 2).partitions()] == [A1, B0, A0]


def test_incremental_updates_adds_and_forgets() -> None:
    sessions = cache()
    session_id = open_session(sessions, [A0, A1])
    ctx = context(sessions, session_id, 1, [(A0, fetch(42)), (B0, fetch(3))], [A1])
    assert dict(ctx.partitions()) == {A0: fetch(42), B0: fetch(3)}
    _, _, selected = respond_all(ctx, {A0: outcome(), B0: outcome()})
    # B0 is new (its cached high watermark was unknown), A0 unchanged.
    assert selected == [B0]


def test_session_emptied_by_forgetting_becomes_sessionless() -> None:
    sessions = cache()
    session_id = open_session(sessions, [A0])
    ctx = context(sessions, session_id, 1, [], [A0])
    assert ctx.kind is ContextKind.SESSIONLESS
    assert sessions.get(session_id) is None
    assert respond_all(ctx, {}) == (ErrorCode.none, INVALID_SESSION_ID, [])


def test_errors_are_always_sent_and_resent_when_cleared() -> None:
    sessions = cache()
    session_id = open_session(sessions, [A0])
    failing = outcome(hw=-1, lso=-1, error=ErrorCode.not_leader_or_follower)
    assert respond_all(context(sessions, session_id, 1), {A0: failing})[2] == [A0]
    assert respond_all(context(sessions, session_id, 2), {A0: failing})[2] == [A0]
    # The error is gone, and everything else equals what was cached before it: sent anyway.
    assert respond_all(context(sessions, session_id, 3), {A0: outcome()})[2] == [A0]
    assert respond_all(context(sessions, session_id, 4), {A0: outcome()})[2] == []


def test_unknown_session_and_wrong_epoch() -> None:
    sessions = cache()
    session_id = open_session(sessions, [A0])
    missing = context(sessions, session_id + 1, 1)
    assert missing.kind is ContextKind.SESSION_ERROR
    assert missing.partitions() == []
    assert respond_all(missing, {}) == (
        ErrorCode.fetch_session_id_not_found,
        INVALID_SESSION_ID,
        [],
    )
    stale = context(sessions, session_id, 5)
    assert respond_all(stale, {}) == (
        ErrorCode.invalid_fetch_session_epoch,
        INVALID_SESSION_ID,
        [],
    )
    # The session is intact: epoch 1 still works.
    assert context(sessions, session_id, 1).kind is ContextKind.INCREMENTAL


def test_duplicate_request_loses_the_race() -> None:
    """Two requests with the same epoch: the second is refused at once, and a context whose
    session moved on meanwhile answers INVALID_FETCH_SESSION_EPOCH."""
    sessions = cache()
    session_id = open_session(sessions, [A0])
    first = context(sessions, session_id, 1)
    assert context(sessions, session_id, 1).error == ErrorCode.invalid_fetch_session_epoch
    second = context(sessions, session_id, 2)
    assert second.kind is ContextKind.INCREMENTAL
    error, answered, selected = respond_all(first, {A0: outcome(size=5)})
    assert (error, answered, selected) == (ErrorCode.invalid_fetch_session_epoch, session_id, [])


def test_a_throttled_answer_creates_and_changes_no_session() -> None:
    """Kafka's ``getThrottledResponse``: a full fetch gets no session, an incremental one its
    id (or INVALID_FETCH_SESSION_EPOCH after a duplicate), and nothing cached moves."""
    sessions = cache()
    full = context(sessions, 0, INITIAL_EPOCH, [(A0, fetch())])
    assert full.throttled() == (ErrorCode.none, INVALID_SESSION_ID)
    assert len(sessions) == 0
    session_id = open_session(sessions, [A0, B0])
    incremental = context(sessions, session_id, 1)
    assert incremental.throttled() == (ErrorCode.none, session_id)
    later = context(sessions, session_id, 2)  # the next request, after the empty answer
    _, _, selected = respond_all(later, {A0: outcome(), B0: outcome()})
    assert selected == [], "nothing changed since the session's last full answer"
    raced = context(sessions, session_id, 3)
    context(sessions, session_id, 4)
    assert raced.throttled() == (ErrorCode.invalid_fetch_session_epoch, session_id)


def test_topic_id_usage_must_not_change() -> None:
    sessions = cache()
    session_id = open_session(sessions, [A0])
    ctx = context(sessions, session_id, 1, uses_topic_ids=True)
    assert ctx.error == ErrorCode.fetch_session_topic_id_error


def test_topic_id_keys() -> None:
    sessions = cache()
    topic_id = uuid.uuid4()
    known = SessionPartition("a", 0, topic_id)
    unknown = SessionPartition("", 0, uuid.uuid4())
    session_id = open_session(sessions, [known, unknown], uses_topic_ids=True)
    ctx = context(
        sessions, session_id, 1, forgotten=[SessionPartition("a", 0, topic_id)], uses_topic_ids=True
    )
    assert [key for key, _ in ctx.partitions()] == [unknown]


def test_full_fetch_closes_the_named_session() -> None:
    sessions = cache()
    first = open_session(sessions, [A0])
    closed = context(sessions, first, FINAL_EPOCH, [(A0, fetch())])
    assert closed.kind is ContextKind.SESSIONLESS
    assert sessions.get(first) is None
    second = open_session(sessions, [A0])
    renewed = context(sessions, second, INITIAL_EPOCH, [(B0, fetch())])
    assert renewed.kind is ContextKind.FULL
    assert sessions.get(second) is None
    _, third, _ = respond_all(renewed, {B0: outcome()})
    assert third not in (INVALID_SESSION_ID, second)
    assert len(sessions) == 1


def test_full_cache_without_evictable_session_gives_no_session() -> None:
    sessions = cache(slots=1, eviction_ms=1000)
    assert open_session(sessions, [A0], now_ms=0) != INVALID_SESSION_ID
    # The only session is young and in use: no room for a new one, even a bigger one.
    ctx = context(sessions, 0, INITIAL_EPOCH, [(A0, fetch()), (A1, fetch())], now_ms=500)
    assert respond_all(ctx, {A0: outcome(), A1: outcome()}, now_ms=500)[1] == INVALID_SESSION_ID
    assert len(sessions) == 1
    assert sessions.evictions == 0


def test_stale_session_is_evicted() -> None:
    sessions = cache(slots=1, eviction_ms=1000)
    old = open_session(sessions, [A0, A1, B0], now_ms=0)
    new = open_session(sessions, [A0], now_ms=1001)
    assert new != INVALID_SESSION_ID
    assert sessions.get(old) is None
    assert sessions.evictions == 1


def test_old_smaller_session_is_evicted_by_a_bigger_one() -> None:
    sessions = cache(slots=1, eviction_ms=1000)
    small = open_session(sessions, [A0], now_ms=0)
    # Keep it in use, so it is not stale, but it is older than eviction_ms.
    assert context(sessions, small, 1, now_ms=900).kind is ContextKind.INCREMENTAL
    assert context(sessions, small, 2, now_ms=1500).kind is ContextKind.INCREMENTAL
    # Same size: not evicted.
    ctx = context(sessions, 0, INITIAL_EPOCH, [(B0, fetch())], now_ms=1600)
    assert respond_all(ctx, {B0: outcome()}, now_ms=1600)[1] == INVALID_SESSION_ID
    bigger = open_session(sessions, [A0, A1, B0], now_ms=1700)
    assert bigger != INVALID_SESSION_ID
    assert sessions.get(small) is None


def test_privileged_session_evicts_a_consumer_session() -> None:
    sessions = cache(slots=1, eviction_ms=1000)
    consumer = open_session(sessions, [A0, A1], now_ms=0)
    follower = open_session(sessions, [A0], now_ms=10, privileged=True)
    assert follower != INVALID_SESSION_ID
    assert sessions.get(consumer) is None


def test_zero_slots_never_creates_sessions() -> None:
    sessions = cache(slots=0)
    ctx = context(sessions, 0, INITIAL_EPOCH, [(A0, fetch())])
    assert respond_all(ctx, {A0: outcome()})[1] == INVALID_SESSION_ID


def test_session_ids_are_unique_and_positive() -> None:
    sessions = cache(slots=200)
    ids = {open_session(sessions, [A0]) for _ in range(200)}
    assert len(ids) == 200
    assert all(0 < session_id < 2**31 for session_id in ids)
