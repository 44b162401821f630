"""The leader's replica bookkeeping: follower catch-up, high watermark candidate, ISR changes,
acks. The high watermark itself is the log's; these tests keep it as a plain int."""

from __future__ import annotations

from strom.common import ErrorCode
from strom.replication.partition_replication import IsrChange, PartitionReplication

LAG_MS = 30_000


def leader(**changes: object) -> PartitionReplication:
    fields: dict[str, object] = {
        "leader_id": 1,
        "replicas": (1, 2, 3),
        "isr": (1, 2, 3),
        "leader_epoch": 5,
        "partition_epoch": 7,
        "leader_epoch_start_offset": 0,
        "max_lag_ms": LAG_MS,
    }
    fields.update(changes)
    return PartitionReplication(**fields)  # type: ignore[arg-type]


def fetch(state: PartitionReplication, broker_id: int, offset: int, end: int, now: int) -> int:
    """A follower's fetch, then the high watermark candidate."""
    state.record_fetch(broker_id, fetch_offset=offset, leader_log_end_offset=end, now_ms=now)
    candidate = state.high_watermark_candidate(end, now_ms=now)
    assert candidate is not None
    return candidate


def test_the_high_watermark_candidate_is_the_smallest_log_end_of_the_isr() -> None:
    state = leader()
    assert fetch(state, 2, 10, 10, 1) == 0  # 3 has nothing yet
    assert fetch(state, 3, 7, 10, 2) == 7
    assert fetch(state, 3, 10, 12, 3) == 10
    assert fetch(state, 3, 4, 12, 4) == 4  # the log's high watermark never goes back


def test_a_lone_leader_s_candidate_is_its_log_end() -> None:
    state = leader(replicas=(1,), isr=(1,))
    assert state.high_watermark_candidate(42, now_ms=1) == 42


def test_a_follower_that_keeps_pace_stays_caught_up() -> None:
    state = leader()
    follower = state.followers[2]
    state.record_fetch(2, fetch_offset=10, leader_log_end_offset=10, now_ms=1_000)
    assert follower.last_caught_up_ms == 1_000
    # Behind the log end now, but at what the end was at its last fetch: caught up as of then.
    state.record_fetch(2, fetch_offset=10, leader_log_end_offset=20, now_ms=5_000)
    assert follower.last_caught_up_ms == 1_000
    state.record_fetch(2, fetch_offset=20, leader_log_end_offset=25, now_ms=9_000)
    assert follower.last_caught_up_ms == 5_000
    state.record_fetch(2, fetch_offset=21, leader_log_end_offset=30, now_ms=12_000)
    assert follower.last_caught_up_ms == 5_000  # not at 25: fell behind


ALL = {1: 10, 2: 20, 3: 30}
"""Every broker eligible: its id and the epoch it is registered in."""


def test_a_lagging_follower_leaves_the_isr_and_a_caught_up_one_joins() -> None:
    state = leader()
    fetch(state, 2, 50, 50, 40_000)
    assert fetch(state, 3, 10, 50, 40_000) == 10
    shrink = state.isr_change(50, high_watermark=10, now_ms=40_000, eligible=ALL)
    assert shrink == IsrChange((1, 2), 7, removed=(3,), broker_epochs=(-1, -1))
    # One AlterPartition at a time.
    assert state.isr_change(50, high_watermark=10, now_ms=40_000, eligible=ALL) is None
    assert state.maximal_isr == (1, 2, 3)  # a shrink counts once committed
    state.isr_committed((1, 2), partition_epoch=8)
    assert state.high_watermark_candidate(50, now_ms=40_000) == 50
    state.record_fetch(3, fetch_offset=50, leader_log_end_offset=50, now_ms=41_000)
    expand = state.isr_change(50, high_watermark=50, now_ms=41_000, eligible=ALL)
    assert expand == IsrChange((1, 2, 3), 8, added=(3,), broker_epochs=(-1, -1, -1))
    assert state.maximal_isr == (1, 2, 3)  # an expansion counts at once (KIP-497)


def test_a_follower_joins_only_past_the_start_of_the_leaders_epoch() -> None:
    state = leader(isr=(1, 2), leader_epoch_start_offset=40)
    state.record_fetch(3, fetch_offset=35, leader_log_end_offset=50, now_ms=1)
    assert state.isr_change(50, high_watermark=30, now_ms=1, eligible=ALL) is None
    state.record_fetch(3, fetch_offset=40, leader_log_end_offset=50, now_ms=2)
    assert state.isr_change(50, high_watermark=30, now_ms=2, eligible=ALL) == IsrChange(
        (1, 2, 3), 7, added=(3,), broker_epochs=(-1, -1, -1)
    )


def test_a_follower_joins_only_at_the_high_watermark() -> None:
    state = leader(isr=(1, 2))
    state.record_fetch(3, fetch_offset=40, leader_log_end_offset=50, now_ms=1)
    assert state.isr_change(50, high_watermark=45, now_ms=1, eligible=ALL) is None
    assert state.isr_change(50, high_watermark=40, now_ms=1, eligible=ALL) == IsrChange(
        (1, 2, 3), 7, added=(3,), broker_epochs=(-1, -1, -1)
    )


def test_only_an_eligible_follower_joins() -> None:
    state = leader(isr=(1, 2))
    state.record_fetch(3, fetch_offset=50, leader_log_end_offset=50, now_ms=1)
    assert state.isr_change(50, high_watermark=50, now_ms=1, eligible={1: 10, 2: 20}) is None
    assert state.isr_change(50, high_watermark=50, now_ms=1, eligible=ALL) is not None


def test_a_restarted_follower_rejoins_only_from_its_new_fetches() -> None:
    """Its last fetch before the restart said 50; it came back with less (an unflushed tail
    lost): nothing vouches for it until it fetches again."""
    state = leader(isr=(1, 2))
    state.record_fetch(3, fetch_offset=50, leader_log_end_offset=50, now_ms=1)
    state.forget_follower(3)
    assert state.isr_change(50, high_watermark=50, now_ms=2, eligible=ALL) is None
    state.record_fetch(3, fetch_offset=42, leader_log_end_offset=60, now_ms=3)
    assert state.isr_change(60, high_watermark=50, now_ms=3, eligible=ALL) is None
    state.record_fetch(3, fetch_offset=60, leader_log_end_offset=60, now_ms=4)
    assert state.isr_change(60, high_watermark=60, now_ms=4, eligible=ALL) is not None


def test_a_follower_joins_only_from_fetches_in_its_registered_broker_epoch() -> None:
    """KIP-903: a fetch sent before its broker registered anew (epoch 30 -> 31) does not vouch
    for it; the AlterPartition carries the epochs the members fetched in."""
    state = leader(isr=(1, 2))
    state.record_fetch(2, fetch_offset=50, leader_log_end_offset=50, now_ms=1, broker_epoch=20)
    state.record_fetch(3, fetch_offset=50, leader_log_end_offset=50, now_ms=1, broker_epoch=30)
    restarted = {**ALL, 3: 31}
    assert state.isr_change(50, high_watermark=50, now_ms=1, eligible=restarted) is None
    state.record_fetch(3, fetch_offset=50, leader_log_end_offset=50, now_ms=2, broker_epoch=31)
    assert state.isr_change(50, high_watermark=50, now_ms=2, eligible=restarted) == IsrChange(
        (1, 2, 3), 7, added=(3,), broker_epochs=(-1, 20, 31)
    )


def test_a_fetch_that_names_no_broker_epoch_is_eligible() -> None:
    """Fetch before v15 has no broker epoch (-1): only the registration is checked."""
    state = leader(isr=(1, 2))
    assert state.isr_change(50, high_watermark=0, now_ms=1, eligible=ALL) is None  # no fetch
    state.record_fetch(3, fetch_offset=50, leader_log_end_offset=50, now_ms=1, broker_epoch=-1)
    assert state.isr_change(50, high_watermark=50, now_ms=1, eligible=ALL) is not None


def test_a_caught_up_follower_outside_the_isr_holds_the_high_watermark_back() -> None:
    state = leader(isr=(1, 2))
    fetch(state, 3, 30, 30, 1)
    assert fetch(state, 2, 40, 40, 2) == 30  # 3 was caught up a moment ago: it is waited for
    assert fetch(state, 2, 50, 50, LAG_MS + 10) == 50  # no longer: the ISR alone decides


def test_acks_all_and_min_insync_replicas() -> None:
    state = leader(isr=(1,))
    assert state.under_min_isr(2)
    assert not leader(replicas=(1,), isr=(1,)).under_min_isr(2)  # at most the replica count
    state = leader(isr=(1, 2))
    assert not state.under_min_isr(2)
    assert not state.ack_state(5, high_watermark=4, min_insync_replicas=2).done
    assert state.ack_state(5, high_watermark=5, min_insync_replicas=2).error is ErrorCode.none
    state.isr_committed((1,), partition_epoch=8)
    after = state.ack_state(5, high_watermark=5, min_insync_replicas=2)
    assert after.done and after.error is ErrorCode.not_enough_replicas_after_append


def test_below_min_isr_the_high_watermark_stays_and_acks_all_fail_at_once() -> None:
    """KIP-966's strict min ISR: what the ISR's lone leader appends is not committed (a
    replica that left the ISR may lead later without losing a commit)."""
    state = leader(isr=(1, 2))
    state.record_fetch(2, fetch_offset=5, leader_log_end_offset=5, now_ms=1)
    assert state.high_watermark_candidate(5, now_ms=1, min_isr=2) == 5
    state.isr_committed((1,), partition_epoch=8)
    assert state.high_watermark_candidate(9, now_ms=2, min_isr=2) is None
    waiting = state.ack_state(9, high_watermark=5, min_insync_replicas=2)
    assert waiting.done and waiting.error is ErrorCode.not_enough_replicas_after_append
    assert state.high_watermark_candidate(9, now_ms=3, min_isr=1) == 5  # 2 lags
    state.record_fetch(2, fetch_offset=9, leader_log_end_offset=9, now_ms=4)
    assert state.high_watermark_candidate(9, now_ms=4, min_isr=1) == 9


def test_a_fenced_follower_out_of_the_isr_holds_the_high_watermark_back_no_more() -> None:
    """Issue 25: the controller fences a silent broker and takes it out of the ISR; while it
    still counts as caught up (within the lag time), only an eligible broker may hold the
    high watermark back, else every partition it follows stalls for the lag time."""
    state = leader()
    for broker_id in (2, 3):
        state.record_fetch(
            broker_id,
            fetch_offset=10,
            leader_log_end_offset=10,
            now_ms=1_000,
            broker_epoch=ALL[broker_id],
        )
    state.isr_committed((1, 2), partition_epoch=8)  # 3 fenced: out of the ISR
    state.record_fetch(2, fetch_offset=20, leader_log_end_offset=20, now_ms=2_000, broker_epoch=20)
    fenced = {1: 10, 2: 20}
    assert state.high_watermark_candidate(20, now_ms=2_000, eligible=fenced) == 20
    # Eligible again (in the epoch it fetched in): a caught-up replica joining is waited for.
    assert state.high_watermark_candidate(20, now_ms=2_000, eligible=ALL) == 10
    # Registered anew (a restart): its earlier fetches make it eligible no more.
    assert state.high_watermark_candidate(20, now_ms=2_000, eligible={**ALL, 3: 31}) == 20


def test_a_reassignment_drops_a_pending_change_only_when_it_names_a_removed_replica() -> None:
    state = leader(replicas=(1, 2, 3, 4), isr=(1,))
    change = IsrChange(isr=(1, 3), partition_epoch=7, added=(3,))
    state.pending = change
    state.reassigned((1, 2, 3))
    assert (state.pending, state.maximal_isr) == (change, (1, 3))
    state.reassigned((1, 2, 4))  # 3 moved away: the controller would refuse the change
    assert (state.maximal_isr, sorted(state.followers)) == ((1,), [2, 4])
