"""The transaction coordinator core: each API's answers and errors, markers, timeouts, fencing,
epoch exhaustion, expiry, and replay after a restart."""

from __future__ import annotations

import pytest
from txn_harness import Marker, TxnHarness

from strom.common import ErrorCode, TopicPartition
from strom.coordinator.txn import FINISHING_HOLD_MS, TransactionState
from strom.coordinator.txn.metadata import MAX_PRODUCER_EPOCH

S = TransactionState
A0 = TopicPartition("a", 0)
A1 = TopicPartition("a", 1)
B0 = TopicPartition("b", 0)


@pytest.fixture
def h() -> TxnHarness:
    harness = TxnHarness(max_timeout_ms=120_000, id_expiration_ms=60_000)
    harness.load()
    return harness


def states(h: TxnHarness, txn: str = "tx") -> list[TransactionState]:
    return [
        TransactionState.from_id(record.value.transaction_status)
        for _, record in h.writer.records
        if record.key.transactional_id == txn and record.value is not None
    ]


def state_of(h: TxnHarness, txn: str) -> TransactionState:
    """The state now (a function call, so that mypy does not narrow it across calls)."""
    return h.core.transactions[txn].state


def test_not_coordinator_before_the_topic_and_loading_while_it_loads() -> None:
    h = TxnHarness()
    core = h.core
    assert core.txn_error("tx") is ErrorCode.coordinator_load_in_progress
    assert h.init().error is ErrorCode.coordinator_load_in_progress
    h.load()
    assert h.init().error is ErrorCode.none
    fresh = type(core)(settings=h.settings, writer=h.writer)
    assert fresh.txn_error("tx") is ErrorCode.not_coordinator


def test_init_producer_id_gives_a_new_id_then_bumps_its_epoch(h: TxnHarness) -> None:
    first = h.init()
    assert (first.error, first.producer_epoch) == (ErrorCode.none, 0)
    second = h.init()
    assert (second.producer_id, second.producer_epoch) == (first.producer_id, 1)
    assert states(h) == [S.EMPTY, S.EMPTY]
    other = h.init("other")
    assert other.producer_id != first.producer_id
    [(partition, _), *_] = h.writer.records
    assert partition == h.core.partition_of("tx")


@pytest.mark.parametrize("timeout_ms", [0, -1, 120_001])
def test_init_refuses_a_timeout_out_of_range(h: TxnHarness, timeout_ms: int) -> None:
    assert h.init(timeout_ms=timeout_ms).error is ErrorCode.invalid_transaction_timeout
    assert h.writer.records == []


def test_add_partitions_checks_the_producer(h: TxnHarness) -> None:
    assert h.add("nobody", 1, 0, A0) is ErrorCode.invalid_producer_id_mapping
    pid = h.init().producer_id
    assert h.add("tx", pid + 1, 0, A0) is ErrorCode.invalid_producer_id_mapping
    assert h.add("tx", pid, 1, A0) is ErrorCode.producer_fenced
    assert h.writer.records[1:] == []
    assert h.add("tx", pid, 0, A0, A1) is ErrorCode.none
    metadata = h.core.transactions["tx"]
    assert metadata.state is S.ONGOING
    assert metadata.partitions == {A0, A1}
    assert metadata.start_timestamp_ms == h.now
    written = len(h.writer.records)
    assert h.add("tx", pid, 0, A1) is ErrorCode.none  # already in: nothing written
    assert len(h.writer.records) == written
    assert h.add("tx", pid, 0, B0) is ErrorCode.none
    assert h.core.transactions["tx"].partitions == {A0, A1, B0}


def test_commit_writes_prepare_markers_then_complete(h: TxnHarness) -> None:
    pid = h.init().producer_id
    h.add("tx", pid, 0, A0, B0)
    assert h.end("tx", pid, 0, commit=True) is ErrorCode.none
    assert h.writer.markers == [Marker(A0, pid, 0, True, 0), Marker(B0, pid, 0, True, 0)]
    assert states(h) == [S.EMPTY, S.ONGOING, S.PREPARE_COMMIT, S.COMPLETE_COMMIT]
    metadata = h.core.transactions["tx"]
    assert metadata.state is S.COMPLETE_COMMIT and metadata.partitions == frozenset()
    # A retried commit is fine; an abort of a committed transaction is not.
    assert h.end("tx", pid, 0, commit=True) is ErrorCode.none
    assert h.end("tx", pid, 0, commit=False) is ErrorCode.invalid_txn_state
    # The next transaction starts from CompleteCommit.
    assert h.add("tx", pid, 0, A1) is ErrorCode.none
    assert h.end("tx", pid, 0, commit=False) is ErrorCode.none
    assert h.writer.markers[-1] == Marker(A1, pid, 0, False, 0)
    assert h.core.transactions["tx"].state is S.COMPLETE_ABORT


def test_end_txn_errors(h: TxnHarness) -> None:
    assert h.end("nobody", 1, 0, commit=True) is ErrorCode.invalid_producer_id_mapping
    pid = h.init().producer_id
    assert h.end("tx", pid, 0, commit=True) is ErrorCode.invalid_txn_state  # Empty
    h.add("tx", pid, 0, A0)
    assert h.end("tx", pid + 1, 0, commit=True) is ErrorCode.invalid_producer_id_mapping
    assert h.end("tx", pid, 3, commit=True) is ErrorCode.producer_fenced
    assert h.core.transactions["tx"].state is S.ONGOING


def test_requests_while_the_markers_are_written(h: TxnHarness) -> None:
    h.writer.hold_markers = True
    pid = h.init().producer_id
    h.add("tx", pid, 0, A0)
    assert h.end("tx", pid, 0, commit=True) is ErrorCode.none
    assert h.core.transactions["tx"].state is S.PREPARE_COMMIT
    assert h.end("tx", pid, 0, commit=True) is ErrorCode.concurrent_transactions
    assert h.end("tx", pid, 0, commit=False) is ErrorCode.invalid_txn_state
    added = h.add_later("tx", pid, 0, A1)  # held until the Complete record is written
    assert added == []
    assert h.add_later("tx", pid + 1, 0, A1) == [ErrorCode.invalid_producer_id_mapping]
    # A produce verified meanwhile (KIP-890) is told to retry, as Kafka's
    # handleVerifyPartitionsInTransaction: INVALID_TXN_STATE is fatal to librdkafka (issue 25).
    verified = h.core.verify_partitions("tx", producer_id=pid, producer_epoch=0, partitions=[A0])
    assert verified == {A0: ErrorCode.concurrent_transactions}
    assert h.init().error is ErrorCode.concurrent_transactions
    [release] = h.writer.held
    release()
    assert added == [ErrorCode.none]  # answered once the commit was complete
    assert state_of(h, "tx") is S.ONGOING and h.core.transactions["tx"].partitions == {A1}


def test_a_held_add_partitions_is_refused_when_the_markers_take_too_long(h: TxnHarness) -> None:
    """The hold is bounded: past FINISHING_HOLD_MS the producer hears CONCURRENT_TRANSACTIONS
    (and retries, as it would have without the hold)."""
    h.writer.hold_markers = True
    pid = h.init().producer_id
    h.add("tx", pid, 0, A0)
    assert h.end("tx", pid, 0, commit=True) is ErrorCode.none
    added = h.add_later("tx", pid, 0, A1)
    assert h.core.next_deadline() == h.now + FINISHING_HOLD_MS
    h.advance(FINISHING_HOLD_MS - 1)
    assert added == []
    h.advance(1)
    assert added == [ErrorCode.concurrent_transactions]
    [release] = h.writer.held
    release()
    assert state_of(h, "tx") is S.COMPLETE_COMMIT
    assert h.add("tx", pid, 0, A1) is ErrorCode.none


def test_a_held_add_partitions_is_answered_when_the_coordinator_moves(h: TxnHarness) -> None:
    h.writer.hold_markers = True
    pid = h.init().producer_id
    h.add("tx", pid, 0, A0)
    assert h.end("tx", pid, 0, commit=True) is ErrorCode.none
    added = h.add_later("tx", pid, 0, A1)
    h.core.unload_partition(h.core.partition_of("tx"))
    assert added == [ErrorCode.not_coordinator]


def test_a_new_producer_aborts_the_ongoing_transaction_and_fences_the_old_one(
    h: TxnHarness,
) -> None:
    pid = h.init().producer_id
    h.add("tx", pid, 0, A0)
    assert h.init().error is ErrorCode.concurrent_transactions
    assert h.writer.markers == [Marker(A0, pid, 1, False, 0)]
    assert h.core.transactions["tx"].state is S.COMPLETE_ABORT
    # The zombie (epoch 0) is fenced; the new producer's retry gets epoch 2.
    assert h.end("tx", pid, 0, commit=True) is ErrorCode.producer_fenced
    assert h.add("tx", pid, 0, A1) is ErrorCode.producer_fenced
    retry = h.init()
    assert (retry.error, retry.producer_id, retry.producer_epoch) == (ErrorCode.none, pid, 2)
    assert states(h) == [S.EMPTY, S.ONGOING, S.PREPARE_ABORT, S.COMPLETE_ABORT, S.EMPTY]


def test_timed_out_transactions_are_aborted_with_a_bumped_epoch(h: TxnHarness) -> None:
    pid = h.init(timeout_ms=3000).producer_id
    h.add("tx", pid, 0, A0)
    h.advance(2000)
    assert h.core.transactions["tx"].state is S.ONGOING
    h.advance(2000)
    metadata = h.core.transactions["tx"]
    assert metadata.state is S.COMPLETE_ABORT
    assert metadata.producer_epoch == 1
    assert h.writer.markers == [Marker(A0, pid, 1, False, 0)]
    assert h.end("tx", pid, 0, commit=True) is ErrorCode.producer_fenced


def test_an_exhausted_epoch_gets_a_new_producer_id(h: TxnHarness) -> None:
    assert h.core.needs_producer_id("tx")
    pid = h.init().producer_id
    assert not h.core.needs_producer_id("tx")
    h.core.transactions["tx"].producer_epoch = MAX_PRODUCER_EPOCH - 1
    assert h.core.needs_producer_id("tx")
    answer = h.init(producer_id=pid, producer_epoch=MAX_PRODUCER_EPOCH - 1)
    assert answer.producer_id != pid and answer.producer_epoch == 0
    assert h.core.transactions["tx"].previous_producer_id == pid
    # The old id retrying (its answer was lost) gets the new id again, nothing written.
    written = len(h.writer.records)
    retry = h.init(producer_id=pid, producer_epoch=MAX_PRODUCER_EPOCH - 1)
    assert (retry.producer_id, retry.producer_epoch) == (answer.producer_id, 0)
    assert len(h.writer.records) == written
    # After a new instance took the id, the old id is fenced (as in Kafka).
    assert h.init().producer_epoch == 1
    assert h.init(producer_id=pid, producer_epoch=MAX_PRODUCER_EPOCH - 1).error is (
        ErrorCode.producer_fenced
    )


def test_kip360_bump_with_the_current_epoch_and_a_lost_answer(h: TxnHarness) -> None:
    pid = h.init().producer_id
    bumped = h.init(producer_id=pid, producer_epoch=0)
    assert (bumped.error, bumped.producer_epoch) == (ErrorCode.none, 1)
    written = len(h.writer.records)
    again = h.init(producer_id=pid, producer_epoch=0)  # the answer of the bump was lost
    assert (again.error, again.producer_epoch) == (ErrorCode.none, 1)
    assert len(h.writer.records) == written
    assert h.init(producer_id=pid, producer_epoch=7).error is ErrorCode.producer_fenced
    assert h.init(producer_id=pid + 5, producer_epoch=1).error is ErrorCode.producer_fenced


def test_the_instance_a_new_one_replaced_cannot_pass_for_a_retry(h: TxnHarness) -> None:
    pid = h.init().producer_id
    assert h.init().producer_epoch == 1  # a new instance (no expected epoch)
    assert h.init(producer_id=pid, producer_epoch=0).error is ErrorCode.producer_fenced
    assert h.core.transactions["tx"].producer_epoch == 1


def test_abort_after_the_coordinator_timed_the_transaction_out(h: TxnHarness) -> None:
    """Kafka's answers (transaction version 1) when the producer aborts a transaction the
    coordinator already aborted after its timeout: its epoch was bumped, so EndTxn and the
    KIP-360 bump librdkafka sends after timed-out messages are PRODUCER_FENCED, never
    INVALID_TXN_STATE; a new instance goes on."""
    pid = h.init(timeout_ms=3000).producer_id
    assert h.init(producer_id=pid, producer_epoch=0, timeout_ms=3000).producer_epoch == 1
    assert h.add("tx", pid, 1, A0) is ErrorCode.none
    h.advance(4000)
    metadata = h.core.transactions["tx"]
    assert (metadata.state, metadata.producer_epoch) == (S.COMPLETE_ABORT, 2)
    assert h.end("tx", pid, 1, commit=False) is ErrorCode.producer_fenced
    assert h.init(producer_id=pid, producer_epoch=1).error is ErrorCode.producer_fenced
    # The epoch before the last KIP-360 bump is no retry either once the coordinator fenced.
    assert h.init(producer_id=pid, producer_epoch=0).error is ErrorCode.producer_fenced
    successor = h.init()
    assert (successor.error, successor.producer_epoch) == (ErrorCode.none, 3)
    assert h.add("tx", pid, 3, A0) is ErrorCode.none
    assert h.end("tx", pid, 3, commit=False) is ErrorCode.none


def test_a_kip360_bump_of_an_ongoing_transaction_aborts_it_then_is_fenced(h: TxnHarness) -> None:
    """librdkafka bumps the epoch (InitProducerId with its own) to abort after messages timed
    out; while the transaction is Ongoing, Kafka fences it and aborts: CONCURRENT_TRANSACTIONS,
    then PRODUCER_FENCED for the retry."""
    pid = h.init().producer_id
    h.add("tx", pid, 0, A0)
    assert h.init(producer_id=pid, producer_epoch=0).error is ErrorCode.concurrent_transactions
    assert state_of(h, "tx") is S.COMPLETE_ABORT
    assert h.init(producer_id=pid, producer_epoch=0).error is ErrorCode.producer_fenced


def test_idle_transactional_ids_expire(h: TxnHarness) -> None:
    pid = h.init("idle").producer_id
    h.init("busy")
    h.advance(30_000)
    busy = h.core.transactions["busy"]
    assert h.add("busy", busy.producer_id, 0, A0) is ErrorCode.none
    h.advance(35_000)
    assert "idle" not in h.core.transactions
    assert "busy" in h.core.transactions  # Ongoing transactions do not expire
    assert h.writer.records[-1][1].value is None
    assert h.core.describe("idle") == (ErrorCode.transactional_id_not_found, None)
    assert h.add("idle", pid, 0, A0) is ErrorCode.invalid_producer_id_mapping


def test_a_failed_write_changes_nothing(h: TxnHarness) -> None:
    pid = h.init().producer_id
    h.writer.fail_appends = ErrorCode.not_coordinator
    assert h.add("tx", pid, 0, A0) is ErrorCode.not_coordinator
    metadata = h.core.transactions["tx"]
    assert metadata.state is S.EMPTY and metadata.pending is None
    h.writer.fail_appends = None
    assert h.add("tx", pid, 0, A0) is ErrorCode.none


def test_a_prepared_transaction_is_completed_after_a_restart(h: TxnHarness) -> None:
    h.writer.hold_markers = True
    pid = h.init().producer_id
    h.add("tx", pid, 0, A0, A1)
    h.end("tx", pid, 0, commit=True)
    h.writer.hold_markers = False
    h.writer.markers.clear()
    h.restart()
    assert h.writer.markers == [Marker(A0, pid, 0, True, 1), Marker(A1, pid, 0, True, 1)]
    assert h.core.transactions["tx"].state is S.COMPLETE_COMMIT


def test_an_ongoing_transaction_is_aborted_after_its_timeout_after_a_restart(
    h: TxnHarness,
) -> None:
    pid = h.init(timeout_ms=5000).producer_id
    h.add("tx", pid, 0, B0)
    h.restart()
    metadata = h.core.transactions["tx"]
    assert (metadata.state, metadata.partitions, metadata.timeout_ms) == (
        S.ONGOING,
        frozenset({B0}),
        5000,
    )
    h.advance(6000)
    assert h.core.transactions["tx"].state is S.COMPLETE_ABORT
    assert h.writer.markers == [Marker(B0, pid, 1, False, 1)]


def test_verify_partitions(h: TxnHarness) -> None:
    pid = h.init().producer_id
    h.add("tx", pid, 0, A0)
    verify = h.core.verify_partitions
    assert verify("tx", producer_id=pid, producer_epoch=0, partitions=[A0, A1]) == {
        A0: ErrorCode.none,
        A1: ErrorCode.invalid_txn_state,
    }
    assert verify("tx", producer_id=pid, producer_epoch=1, partitions=[A0]) == {
        A0: ErrorCode.producer_fenced
    }
    assert verify("no", producer_id=pid, producer_epoch=0, partitions=[A0]) == {
        A0: ErrorCode.invalid_producer_id_mapping
    }


def test_describe_and_list(h: TxnHarness) -> None:
    first = h.init("one").producer_id
    second = h.init("two").producer_id
    h.add("two", second, 0, A0)
    error, metadata = h.core.describe("two")
    assert error is ErrorCode.none and metadata is not None
    assert (metadata.state, metadata.partitions) == (S.ONGOING, frozenset({A0}))
    list_all = h.core.list_transactions
    _, unknown, found = list_all(states=[], producer_ids=[], duration_ms=-1, now_ms=h.now)
    assert [m.transactional_id for m in found] == ["one", "two"] and unknown == []
    _, unknown, found = list_all(
        states=["Ongoing", "Bogus"], producer_ids=[], duration_ms=-1, now_ms=h.now
    )
    assert [m.transactional_id for m in found] == ["two"] and unknown == ["Bogus"]
    _, _, found = list_all(states=[], producer_ids=[first], duration_ms=-1, now_ms=h.now)
    assert [m.transactional_id for m in found] == ["one"]
    _, _, found = list_all(states=["Ongoing"], producer_ids=[], duration_ms=10, now_ms=h.now)
    assert found == []
    _, _, found = list_all(states=["Ongoing"], producer_ids=[], duration_ms=10, now_ms=h.now + 10)
    assert [m.transactional_id for m in found] == ["two"]


def test_a_partition_led_elsewhere_is_unloaded_and_loads_again_by_replay(h: TxnHarness) -> None:
    first = h.init()
    partition = h.core.partition_of("tx")
    h.core.unload_partition(partition)
    assert "tx" not in h.core.transactions
    assert h.core.txn_error("tx") is ErrorCode.not_coordinator
    h.core.begin_loading_partition(partition)
    assert h.core.txn_error("tx") is ErrorCode.coordinator_load_in_progress
    for record_partition, record in h.writer.records:
        if record_partition == partition:
            h.core.replay(record)
    h.core.finish_loading(partition, coordinator_epoch=1, now_ms=0)
    again = h.init()
    assert (again.producer_id, again.producer_epoch) == (first.producer_id, 1)


def test_markers_of_an_earlier_load_do_not_write_a_stale_complete_record(h: TxnHarness) -> None:
    """A transaction prepared at one load has its markers still retrying when the partition
    is unloaded and loaded again; the new load completes it and the producer moves on to a
    new epoch. When the first markers finally return, their Complete record must not be
    written: it carried the old producer epoch, and a coordinator loading the log after it
    handed out an epoch already used (found by the replica simulation, seed 222 with the cut
    after expansion limited to orders-0: a later transaction's batches were taken for
    duplicates of an earlier one's and its acknowledged COMMIT was visible nowhere)."""
    h.writer.hold_markers = True
    pid = h.init().producer_id
    h.add("tx", pid, 0, A0)
    assert h.end("tx", pid, 0, commit=True) is ErrorCode.none
    [first_markers] = h.writer.held
    partition = h.core.partition_of("tx")
    h.core.unload_partition(partition)  # led elsewhere, then here again
    h.core.begin_loading_partition(partition)
    for record_partition, record in h.writer.records:
        if record_partition == partition:
            h.core.replay(record)
    h.core.finish_loading(partition, coordinator_epoch=1, now_ms=h.now)
    _, second_markers = h.writer.held
    second_markers()  # this load's markers: Complete written
    again = h.init()
    assert again.producer_epoch == 1
    h.add("tx", pid, 1, A1)
    assert h.end("tx", pid, 1, commit=True) is ErrorCode.none  # prepared again, epoch 1
    written = len(h.writer.records)
    first_markers()  # the first load's markers come back at last
    assert len(h.writer.records) == written
    assert h.core.transactions["tx"].producer_epoch == 1
