"""The chaos checker: each anomaly in a small history that has it, none in the nearby history
that does not, and histories of a correct Kafka (a model) always valid."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from strom.testing.chaos.checker import KINDS, CheckResult, check
from strom.testing.chaos.history import EventType
from strom.testing.chaos.operations import fault_windows, operations

from .chaos_histories import HistoryBuilder, every_anomaly

Row = tuple[str, int, int, Any]


def kinds(result: CheckResult) -> set[str]:
    return set(result.anomalies)


def only(result: CheckResult, kind: str) -> dict[str, Any]:
    """The details of the one anomaly of ``kind`` (failing if there are several)."""
    (anomaly,) = result.anomalies[kind]
    assert anomaly.kind == kind
    assert "\n" not in anomaly.description
    return dict(anomaly.details)


def three_sends(b: HistoryBuilder) -> list[Row]:
    """Acks ``a``, ``b``, ``c`` at t/0@0..2; returns the records a full read sees."""
    for offset, value in enumerate("abc"):
        b.send("producer-0", "t", 0, value, offset)
    return [("t", 0, offset, value) for offset, value in enumerate("abc")]


def test_a_correct_history_is_valid_and_counted() -> None:
    b = HistoryBuilder()
    records = three_sends(b)
    b.send("producer-0", "t", 0, "d", outcome="fail")
    b.send("producer-0", "t", 0, "e", outcome="info")
    b.poll("consumer-0", *records[:2])
    b.poll("consumer-0", records[2])
    b.commit("consumer-0", "g", [("t", 0, 3)])
    b.final_read(*records)
    result = check(b.events)
    assert result.valid
    assert result.anomalies == {}
    stats = result.stats
    assert (stats.sends_invoked, stats.sends_ok, stats.sends_fail, stats.sends_info) == (5, 3, 1, 1)
    assert (stats.polls, stats.values_read, stats.final_read_values, stats.commits) == (2, 3, 3, 1)
    assert stats.acks_after_heal == 3
    assert result.summary().startswith("VALID")
    assert "not checked: no-progress" in result.summary()


def test_lost_write() -> None:
    b = HistoryBuilder()
    records = three_sends(b)
    b.final_read(records[0], records[2])
    assert only(check(b.events), "lost-write") == {
        "topic": "t",
        "partition": 0,
        "offset": 1,
        "value": "b",
        "writer": "send",
        "process": "producer-0",
        "index": 3,
    }


def test_unacknowledged_sends_are_not_lost() -> None:
    b = HistoryBuilder()
    records = three_sends(b)
    b.send("producer-0", "t", 0, "d", outcome="info")
    b.send("producer-0", "t", 0, "e", outcome="fail")
    b.event("producer-1", "invoke", "send", {"topic": "t", "partition": 0, "value": "f"})
    b.final_read(*records)
    result = check(b.events)
    assert result.valid
    assert result.stats.sends_info == 2


def test_a_committed_transaction_s_write_can_be_lost() -> None:
    b = HistoryBuilder()
    b.txn("txn-0", [("t", 0, "x"), ("t", 1, "y")])
    b.final_read(("t", 1, 0, "y"))
    details = only(check(b.events), "lost-write")
    assert (details["value"], details["writer"], details["offset"]) == ("x", "txn", None)


def test_loss_is_not_judged_without_a_complete_final_read() -> None:
    b = HistoryBuilder()
    records = three_sends(b)
    b.final_read(records[0], complete=False)
    result = check(b.events)
    assert result.valid
    assert result.unchecked["lost-write"] == "no complete final read"
    assert "not checked: lost-write (no complete final read)" in result.summary()

    without = HistoryBuilder()
    three_sends(without)
    assert "lost-write" in check(without.events).unchecked


def test_duplicate() -> None:
    b = HistoryBuilder()
    records = three_sends(b)
    b.poll("consumer-0", *records, ("t", 0, 3, "a"))
    b.final_read(*records, ("t", 0, 3, "a"))
    details = only(check(b.events), "duplicate")
    assert details["value"] == "a"
    assert details["positions"] == [["t", 0, 0], ["t", 0, 3]]
    assert details["count"] == 2


def test_one_value_seen_at_one_position_by_many_is_no_duplicate() -> None:
    b = HistoryBuilder()
    records = three_sends(b)
    b.poll("consumer-0", *records)
    b.poll("consumer-1", *records)
    b.final_read(*records)
    assert check(b.events).valid


def test_inconsistent_offsets() -> None:
    b = HistoryBuilder()
    b.send("producer-0", "t", 0, "a", 0)
    b.send("producer-1", "t", 0, "b", 0)
    b.final_read(("t", 0, 0, "a"), ("t", 0, 1, "b"))
    result = check(b.events)
    details = only(result, "inconsistent-offsets")
    assert (details["topic"], details["partition"], details["offset"]) == ("t", 0, 0)
    assert details["values"] == ["a", "b"]
    assert details["processes"] == ["producer-0", "producer-1"]
    assert kinds(result) == {"inconsistent-offsets", "duplicate"}


def test_nonmonotonic_send() -> None:
    b = HistoryBuilder()
    b.send("producer-0", "t", 0, "a", 5)
    b.send("producer-0", "t", 0, "b", 3)
    b.final_read(*[("t", 0, o, "-") for o in range(3)], ("t", 0, 3, "b"), ("t", 0, 5, "a"))
    details = only(check(b.events), "nonmonotonic-send")
    assert details["offsets"] == [5, 3]
    assert details["values"] == ["a", "b"]
    assert details["process"] == "producer-0"


def test_sends_of_different_producers_or_partitions_may_interleave() -> None:
    b = HistoryBuilder()
    b.send("producer-0", "t", 0, "a", 1)
    b.send("producer-1", "t", 0, "b", 0)
    b.send("producer-0", "t", 1, "c", 0)
    b.final_read(("t", 0, 0, "b"), ("t", 0, 1, "a"), ("t", 1, 0, "c"))
    assert check(b.events).valid


def test_sends_are_ordered_by_invoke_even_when_acks_come_out_of_order() -> None:
    b = HistoryBuilder()
    first = {"topic": "t", "partition": 0, "value": "a"}
    second = {"topic": "t", "partition": 0, "value": "b"}
    b.event("producer-0", "invoke", "send", first)
    b.event("producer-0", "invoke", "send", second)
    b.event("producer-0", "ok", "send", second | {"offset": 0})
    b.event("producer-0", "ok", "send", first | {"offset": 1})
    b.final_read(("t", 0, 0, "b"), ("t", 0, 1, "a"))
    details = only(check(b.events), "nonmonotonic-send")
    assert details["values"] == ["a", "b"]


def test_nonmonotonic_poll() -> None:
    b = HistoryBuilder()
    records = three_sends(b)
    b.poll("consumer-0", *records[:2])
    b.poll("consumer-0", records[1], records[2])
    details = only(check(b.events), "nonmonotonic-poll")
    assert details["offsets"] == [1, 1]
    assert details["process"] == "consumer-0"


def test_a_rewind_after_an_assign_is_no_nonmonotonic_poll() -> None:
    b = HistoryBuilder()
    records = three_sends(b)
    b.poll("consumer-0", *records)
    b.assign("consumer-0", ("t", 0))
    b.poll("consumer-0", *records)
    b.poll("consumer-1", *records)
    assert check(b.events).valid


def test_poll_skip() -> None:
    b = HistoryBuilder()
    records = three_sends(b)
    b.poll("consumer-0", records[0])
    b.poll("consumer-0", records[2])
    details = only(check(b.events), "poll-skip")
    assert details["offsets"] == [0, 2]
    assert details["skipped"] == [1]
    assert details["count"] == 1


def test_a_gap_nobody_saw_a_record_in_is_no_poll_skip() -> None:
    b = HistoryBuilder()
    b.send("producer-0", "t", 0, "a", 0)
    b.send("producer-0", "t", 0, "b", 3)  # 1 and 2: a transaction's records and its marker
    b.poll("consumer-0", ("t", 0, 0, "a"), ("t", 0, 3, "b"))
    b.final_read(("t", 0, 0, "a"), ("t", 0, 3, "b"))
    assert check(b.events).valid


def test_a_jump_after_an_assign_is_no_poll_skip() -> None:
    b = HistoryBuilder()
    records = three_sends(b)
    b.poll("consumer-0", records[0])
    b.assign("consumer-0", ("t", 0))
    b.poll("consumer-0", records[2])
    assert check(b.events).valid


def test_aborted_read() -> None:
    b = HistoryBuilder()
    b.txn("txn-0", [("t", 0, "x")], outcome="fail")
    b.poll("consumer-0", ("t", 0, 0, "x"))
    b.final_read(("t", 0, 0, "x"))
    details = only(check(b.events), "aborted-read")
    assert (details["value"], details["writer"], details["process"]) == ("x", "txn", "txn-0")
    assert details["reads"] == [["t", 0, 0, "consumer-0", 2], ["t", 0, 0, "final-reader", 3]]
    assert details["count"] == 2


def test_a_failed_send_read_is_an_aborted_read() -> None:
    b = HistoryBuilder()
    b.send("producer-0", "t", 0, "x", outcome="fail")
    b.poll("consumer-0", ("t", 0, 0, "x"))
    assert only(check(b.events), "aborted-read")["writer"] == "send"


def test_an_unknown_transaction_may_be_read_and_an_aborted_one_unread() -> None:
    b = HistoryBuilder()
    b.txn("txn-0", [("t", 0, "x")], outcome="info")
    b.txn("txn-0", [("t", 0, "y")], outcome="fail")
    b.poll("consumer-0", ("t", 0, 0, "x"))
    b.final_read(("t", 0, 0, "x"))
    result = check(b.events)
    assert result.valid
    assert (result.stats.txns_unknown, result.stats.txns_aborted) == (1, 1)


def test_unexpected() -> None:
    b = HistoryBuilder()
    records = three_sends(b)
    b.poll("consumer-0", *records, ("t", 0, 3, "z"))
    details = only(check(b.events), "unexpected")
    assert details["value"] == "z"
    assert details["reads"] == [["t", 0, 3, "consumer-0", 6]]


def test_a_value_of_an_unacknowledged_send_is_expected() -> None:
    b = HistoryBuilder()
    b.send("producer-0", "t", 0, "a", outcome="info")
    b.event("producer-1", "invoke", "send", {"topic": "t", "partition": None, "value": "b"})
    b.poll("consumer-0", ("t", 0, 0, "a"), ("t", 0, 1, "b"))
    assert check(b.events).valid


def test_offset_regression() -> None:
    b = HistoryBuilder()
    b.commit("consumer-0", "g", [("t", 0, 5), ("t", 1, 2)])
    b.commit("consumer-1", "g", [("t", 0, 3), ("t", 1, 2)])
    details = only(check(b.events), "offset-regression")
    assert details == {
        "group": "g",
        "topic": "t",
        "partition": 0,
        "offsets": [5, 3],
        "processes": ["consumer-0", "consumer-1"],
        "indexes": [1, 3],
    }


def test_failed_commits_and_other_groups_do_not_regress() -> None:
    b = HistoryBuilder()
    b.commit("consumer-0", "g", [("t", 0, 5)])
    b.commit("consumer-1", "g", [("t", 0, 3)], outcome="fail")
    b.commit("consumer-2", "h", [("t", 0, 1)])
    b.commit("consumer-0", "g", [("t", 0, 5)])
    result = check(b.events)
    assert result.valid
    assert result.stats.commits == 3


def bank_read(*legs: str) -> list[Row]:
    return [("bank", 0, offset, leg) for offset, leg in enumerate(legs)]


def test_a_correct_bank_is_valid() -> None:
    b = HistoryBuilder()
    b.transfer("bank-0", 1, "a1", "a2", 5)
    b.transfer("bank-1", 2, "a2", "a3", 3)
    b.transfer("bank-1", 3, "a3", "a1", 7, outcome="fail")
    b.transfer("bank-1", 4, "a3", "a1", 7, outcome="info")
    b.final_read(*bank_read("1:a1:-5", "1:a2:5", "2:a2:-3", "2:a3:3"))
    result = check(b.events)
    assert result.valid, result.summary()
    assert (result.stats.txns_committed, result.stats.txns_aborted) == (2, 1)


def test_non_atomic_transfer() -> None:
    b = HistoryBuilder()
    b.transfer("bank-0", 1, "a1", "a2", 5)
    b.final_read(*bank_read("1:a1:-5"))
    result = check(b.events)
    details = only(result, "non-atomic-transfer")
    assert details["transfer"] == "1"
    assert (details["from"], details["to"], details["amount"]) == ("a1", "a2", 5)
    assert details["missing"] == ["1:a2:5"]
    assert only(result, "wrong-total") == {"total": -5, "legs": 1}
    assert kinds(result) == {"non-atomic-transfer", "wrong-total", "lost-write"}


def test_duplicate_transfer() -> None:
    b = HistoryBuilder()
    b.transfer("bank-0", 1, "a1", "a2", 5)
    b.final_read(*bank_read("1:a1:-5", "1:a2:5", "1:a1:-5", "1:a2:5"))
    result = check(b.events)
    assert only(result, "duplicate-transfer")["legs"] == [
        ["bank", 0, 0, "1:a1:-5"],
        ["bank", 0, 1, "1:a2:5"],
        ["bank", 0, 2, "1:a1:-5"],
        ["bank", 0, 3, "1:a2:5"],
    ]
    assert kinds(result) == {"duplicate-transfer", "duplicate"}


def test_lost_transfer() -> None:
    b = HistoryBuilder()
    b.transfer("bank-0", 1, "a1", "a2", 5)
    b.transfer("bank-0", 2, "a1", "a2", 5, outcome="fail")
    b.final_read()
    result = check(b.events)
    assert only(result, "lost-transfer")["outcomes"] == ["ok"]
    assert kinds(result) == {"lost-transfer", "lost-write"}


def test_wrong_total() -> None:
    b = HistoryBuilder()
    b.txn("bank-0", [("bank", 0, "1:a1:-5"), ("bank", 0, "1:a2:6")], transfer={"id": 1})
    b.final_read(*bank_read("1:a1:-5", "1:a2:6"))
    result = check(b.events)
    assert only(result, "wrong-total") == {"total": 1, "legs": 2}
    assert kinds(result) == {"wrong-total"}


def test_a_transfer_retried_under_its_id_is_one_transfer() -> None:
    b = HistoryBuilder()
    b.transfer("bank-0", 1, "a1", "a2", 5, outcome="info")
    b.transfer("bank-0", 1, "a1", "a2", 5)
    b.final_read(*bank_read("1:a1:-5", "1:a2:5"))
    assert check(b.events).valid

    twice = HistoryBuilder()
    twice.transfer("bank-0", 1, "a1", "a2", 5, outcome="info")
    twice.transfer("bank-0", 1, "a1", "a2", 5)
    twice.final_read(*bank_read("1:a1:-5", "1:a2:5", "1:a1:-5", "1:a2:5"))
    details = only(check(twice.events), "duplicate-transfer")
    assert details["outcomes"] == ["info", "ok"]


def test_the_bank_is_not_judged_without_a_complete_final_read() -> None:
    b = HistoryBuilder()
    b.transfer("bank-0", 1, "a1", "a2", 5)
    b.final_read(*bank_read("1:a1:-5"), complete=False)
    result = check(b.events)
    assert result.valid
    assert set(result.unchecked) >= {"lost-transfer", "non-atomic-transfer", "wrong-total"}


def test_values_outside_the_legs_topics_are_not_legs() -> None:
    b = HistoryBuilder()
    b.transfer("bank-0", 1, "a1", "a2", 5)
    b.send("producer-0", "other", 0, "9:a1:100", 0)
    b.final_read(*bank_read("1:a1:-5", "1:a2:5"), ("other", 0, 0, "9:a1:100"))
    assert check(b.events).valid


def test_no_progress() -> None:
    b = HistoryBuilder()
    b.fault_start("partition", ["broker-1"])
    b.send("producer-0", "t", 0, "a", 0)
    b.fault_heal("partition", ["broker-1"])
    b.send("producer-0", "t", 0, "b", outcome="info")
    result = check(b.events, min_acks_after_heal=1)
    assert only(result, "no-progress") == {"acks": 0, "required": 1, "last_heal_index": 3}
    assert "no-progress" not in result.unchecked
    assert check(b.events).valid


def test_progress_after_the_last_heal() -> None:
    b = HistoryBuilder()
    b.fault_start("kill", ["broker-1"])
    b.fault_heal("kill", ["broker-1"])
    b.send("producer-0", "t", 0, "a", 0)
    b.txn("txn-0", [("t", 0, "b")])
    result = check(b.events, min_acks_after_heal=2)
    assert result.valid
    assert (result.stats.acks_after_heal, result.stats.faults) == (2, 1)


def test_summary_names_each_kind_found_with_its_count() -> None:
    b = HistoryBuilder()
    records = three_sends(b)
    b.poll("consumer-0", records[0], ("t", 0, 7, "z"), ("t", 0, 8, "y"))
    b.final_read(records[0])
    result = check(b.events)
    summary = result.summary().splitlines()
    assert summary[0] == "INVALID: 5 anomalies"
    assert summary[1:4] == ["  lost-write: 2", "  poll-skip: 1", "  unexpected: 2"]
    assert list(result.anomalies) == [kind for kind in KINDS if kind in result.anomalies]


def test_lost_topic() -> None:
    b = HistoryBuilder()
    b.create_topic("creator", "orders")
    b.create_topic("creator", "payments")
    b.create_topic("creator", "unknown", outcome="info")  # may or may not exist: not judged
    b.event("final-reader", "ok", "final-topics", {"topics": ["orders"]})
    result = check(b.events)
    assert only(result, "lost-topic") == {"topic": "payments", "process": "creator", "index": 3}


def test_topics_are_not_judged_without_the_final_topics() -> None:
    b = HistoryBuilder()
    b.create_topic("creator", "orders")
    result = check(b.events)
    assert result.valid
    assert "lost-topic" in result.unchecked


def test_every_kind_in_one_history() -> None:
    result = check(every_anomaly().events, min_acks_after_heal=1)
    assert list(result.anomalies) == list(KINDS)
    assert result.unchecked == {}
    assert not result.valid


def test_operations_pair_concurrent_invokes_by_value_and_leave_none_pending() -> None:
    b = HistoryBuilder()
    b.event("p", "invoke", "send", {"topic": "t", "partition": None, "value": "a"})
    b.event("p", "invoke", "send", {"topic": "t", "partition": None, "value": "b"})
    b.event("p", "ok", "send", {"topic": "t", "partition": 2, "value": "b", "offset": 0})
    b.fault_start("pause", ["broker-2"])
    ops = list(operations(b.events))
    assert [(op.value["value"], op.type) for op in ops if op.f == "send"] == [
        ("b", "ok"),
        ("a", "info"),
    ]
    assert ops[0].invoke is b.events[1]
    assert ops[0].value["partition"] == 2
    (window,) = fault_windows(b.events)
    assert (window.name, window.targets, window.end) == ("pause", ["broker-2"], None)


# A model of a correct Kafka: acked sends at increasing offsets per partition, unacknowledged
# ones that may or may not have landed, consumers reading contiguous ranges from where they
# are, and rebalances rewinding them; then a complete final read of every log.

PARTITIONS = 3
Step = tuple[str, int, int, int]
steps = st.tuples(
    st.sampled_from(["send", "info", "poll", "assign"]),
    st.integers(0, 2),
    st.integers(0, PARTITIONS - 1),
    st.integers(0, 4),
)


def model_run(plan: list[Step]) -> tuple[HistoryBuilder, list[Row]]:
    """The history the plan makes a correct cluster record, and the final read's records."""
    b = HistoryBuilder()
    logs: list[list[str]] = [[] for _ in range(PARTITIONS)]
    positions = [[0] * PARTITIONS for _ in range(3)]
    for number, (action, who, partition, n) in enumerate(plan):
        log, value = logs[partition], f"v{number}"
        if action == "send":
            b.send(f"producer-{who}", "t", partition, value, len(log))
            log.append(value)
        elif action == "info":
            b.send(f"producer-{who}", "t", partition, value, outcome="info")
            if n % 2:
                log.append(value)
        elif action == "poll":
            start = positions[who][partition]
            read = log[start : start + n]
            b.poll(f"consumer-{who}", *[("t", partition, start + i, v) for i, v in enumerate(read)])
            positions[who][partition] += len(read)
        else:
            positions[who] = [min(position, n) for position in positions[who]]
            b.assign(f"consumer-{who}", *[("t", p) for p in range(PARTITIONS)])
    final = [
        ("t", p, offset, value) for p, log in enumerate(logs) for offset, value in enumerate(log)
    ]
    return b, final


@settings(max_examples=200, deadline=None)
@given(st.lists(steps, max_size=60))
def test_a_correct_cluster_s_history_is_valid(plan: list[Step]) -> None:
    b, final = model_run(plan)
    b.final_read(*final)
    result = check(b.events)
    assert result.valid, result.summary()


@settings(max_examples=100, deadline=None)
@given(st.lists(steps, max_size=60), st.data())
def test_an_acked_record_dropped_from_the_final_read_is_lost(
    plan: list[Step], data: st.DataObject
) -> None:
    b, final = model_run([("send", 0, 0, 0), *plan])
    acked = _acked_values(b)
    dropped = data.draw(st.sampled_from([record for record in final if record[3] in acked]))
    final.remove(dropped)
    b.final_read(*final)
    result = check(b.events)
    assert kinds(result) == {"lost-write"}
    assert [a.details["value"] for a in result.anomalies["lost-write"]] == [dropped[3]]


@settings(max_examples=100, deadline=None)
@given(st.lists(steps, max_size=60), st.data())
def test_a_value_copied_to_a_new_offset_is_a_duplicate(
    plan: list[Step], data: st.DataObject
) -> None:
    b, final = model_run([("send", 0, 0, 0), *plan])
    _, _, _, value = data.draw(st.sampled_from(final))
    partition = data.draw(st.integers(0, PARTITIONS - 1))
    end = 1 + max((offset for _, p, offset, _ in final if p == partition), default=-1)
    b.final_read(*final, ("t", partition, end, value))
    result = check(b.events)
    assert [a.details["value"] for a in result.anomalies["duplicate"]] == [value]


@settings(max_examples=100, deadline=None)
@given(st.lists(steps, max_size=60), st.data())
def test_two_values_swapped_are_inconsistent_offsets(plan: list[Step], data: st.DataObject) -> None:
    b, final = model_run([("send", 0, 0, 0), ("send", 0, 1, 0), *plan])
    acked = _acked_values(b)
    candidates = [i for i, record in enumerate(final) if record[3] in acked]
    i, j = data.draw(st.lists(st.sampled_from(candidates), min_size=2, max_size=2, unique=True))
    (ti, pi, oi, vi), (tj, pj, oj, vj) = final[i], final[j]
    final[i], final[j] = (ti, pi, oi, vj), (tj, pj, oj, vi)
    b.final_read(*final)
    result = check(b.events)
    swapped = {
        (a.details["partition"], a.details["offset"])
        for a in result.anomalies["inconsistent-offsets"]
    }
    assert swapped == {(pi, oi), (pj, oj)}


def _acked_values(b: HistoryBuilder) -> set[str]:
    return {e.value["value"] for e in b.events if e.f == "send" and e.type == "ok"}


# A model of a correct bank: each transfer commits (both legs visible), aborts (neither) or is
# unknown (both or neither).

OUTCOMES: tuple[EventType, ...] = ("ok", "fail", "info")
Transfer = tuple[EventType, bool, int]
transfers = st.lists(
    st.tuples(st.sampled_from(OUTCOMES), st.booleans(), st.integers(1, 9)),
    min_size=1,
    max_size=30,
)


def bank_run(plan: list[Transfer]) -> tuple[HistoryBuilder, list[str]]:
    """The history of the planned transfers between three accounts, and the visible legs."""
    b, legs = HistoryBuilder(), []
    for id_, (outcome, landed, amount) in enumerate(plan):
        source, target = f"a{id_ % 3}", f"a{(id_ + 1) % 3}"
        b.transfer(f"bank-{id_ % 2}", id_, source, target, amount, outcome=outcome)
        if outcome == "ok" or (outcome == "info" and landed):
            legs += [f"{id_}:{source}:{-amount}", f"{id_}:{target}:{amount}"]
    return b, legs


@settings(max_examples=100, deadline=None)
@given(transfers)
def test_a_correct_bank_s_history_is_valid(plan: list[Transfer]) -> None:
    b, legs = bank_run(plan)
    b.final_read(*bank_read(*legs))
    result = check(b.events)
    assert result.valid, result.summary()


@settings(max_examples=100, deadline=None)
@given(transfers, st.data())
def test_a_leg_dropped_is_a_non_atomic_transfer(plan: list[Transfer], data: st.DataObject) -> None:
    b, legs = bank_run([("ok", True, 1), *plan])
    dropped = legs.pop(data.draw(st.integers(0, len(legs) - 1)))
    b.final_read(*bank_read(*legs))
    result = check(b.events)
    (anomaly,) = result.anomalies["non-atomic-transfer"]
    assert anomaly.details["missing"] == [dropped]
    assert "wrong-total" in result.anomalies
