"""The checker: names the anomalies in a chaos run's history, with Jepsen's names for them (its
Kafka and Redpanda analyses). Pure: a history in, a :class:`CheckResult` out.

What it assumes of a history (besides :mod:`strom.testing.chaos.history`'s contract):

- Written values are unique across the run (every send and every transaction write its own),
  so a value names one write; values are JSON scalars (lists and objects are compared by their
  JSON text).
- Positions come from acks (a ``send``'s ``ok`` with ``partition`` and ``offset``) and reads
  (``poll`` and ``final-read`` records). Transactions' writes carry no offsets: only reads
  place them.
- Several ``final-read`` events are one final read together (their records' union); it is
  complete only if each says ``complete``. Without a complete final read, lost writes and the
  bank are not judged (:attr:`CheckResult.unchecked` says so).
- An operation never completed counts as ``info`` (indeterminate), as in Jepsen.
- A failed (``fail``) send is certain not to have happened, as a failed transaction: reading
  its value is an ``aborted-read``.
- Consumers read committed data only: a record of an aborted transaction that one reader sees
  makes another reader's jump over its offset a ``poll-skip``.
- A consumer records ``assign`` before the poll that returns records from its new assignment
  (the rebalance callback runs inside that poll), so a rewind or a jump after it is not judged.
- The bank: a ``txn`` whose value carries ``"transfers": [{"id", "from", "to", "amount"}, ...]``
  applies those transfers; its ``writes`` are their legs, ``"<id>:<account>:<delta>"`` (no
  colon in the id or the account). The legs' topics are the topics transfers wrote to
  (nothing else should write there); every final-read value of those topics in that format
  is a leg, and each transfer is judged by its legs visible there. A committed transfer with
  no leg visible is a ``lost-transfer`` and each leg a ``lost-write``; transactions retrying
  one transfer id are one transfer (both committing is a ``duplicate-transfer``).
- Topics: a ``create-topic`` acknowledged (``ok``) must be among the ``"topics"`` of the
  ``final-topics`` event (the cluster's topics after the run), or it is a ``lost-topic``;
  without that event topics are not judged.
- ``no-progress`` counts sends and transactions acknowledged after the last ``ok`` of a
  ``fault`` (all of them if none healed), so a run should heal every fault before its last
  phase.
"""

from __future__ import annotations

import bisect
import itertools
import json
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import cached_property
from typing import Any, Final, NamedTuple, TypeVar

from strom.testing.chaos.history import Event
from strom.testing.chaos.operations import Operation, operations

__all__ = ["KINDS", "Anomaly", "CheckResult", "Stats", "check"]

KINDS: Final[tuple[str, ...]] = (
    "lost-write",
    "duplicate",
    "inconsistent-offsets",
    "nonmonotonic-send",
    "nonmonotonic-poll",
    "poll-skip",
    "aborted-read",
    "unexpected",
    "offset-regression",
    "non-atomic-transfer",
    "duplicate-transfer",
    "lost-transfer",
    "wrong-total",
    "lost-topic",
    "no-progress",
)
"""Every kind the checker names, in the order reports list them."""

_BANK_KINDS: Final = ("non-atomic-transfer", "duplicate-transfer", "lost-transfer", "wrong-total")

_MAX_LISTED: Final = 20
"""How many offsets or reads one anomaly's details list at most (the count says the rest)."""


@dataclass(frozen=True, slots=True)
class Anomaly:
    kind: str
    description: str
    """One line a person reads."""
    details: Mapping[str, Any]
    """JSON values: topic, partition, offsets, values, processes, event indexes."""


@dataclass(frozen=True, slots=True)
class Stats:
    sends_invoked: int = 0
    sends_ok: int = 0
    sends_fail: int = 0
    sends_info: int = 0
    polls: int = 0
    values_read: int = 0
    """Records the polls returned (the final read's are counted apart)."""
    final_read_values: int = 0
    commits: int = 0
    """Acknowledged commits."""
    txns_committed: int = 0
    txns_aborted: int = 0
    txns_unknown: int = 0
    faults: int = 0
    acks_after_heal: int = 0
    """Sends and transactions acknowledged after the last fault healed (or at all, if none)."""

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class CheckResult:
    anomalies: Mapping[str, tuple[Anomaly, ...]]
    """Only the kinds found (each with at least one anomaly), in :data:`KINDS` order."""
    stats: Stats
    unchecked: Mapping[str, str]
    """Kinds the history did not allow to judge, with why (e.g. no complete final read)."""

    @property
    def valid(self) -> bool:
        return not self.anomalies

    def counts(self) -> dict[str, int]:
        return {kind: len(found) for kind, found in self.anomalies.items()}

    def summary(self) -> str:
        """A few lines for a terminal: the verdict, each kind found, what was not checked."""
        total = sum(self.counts().values())
        verdict = "VALID" if self.valid else f"INVALID: {total} anomalies"
        lines = [verdict]
        lines += [f"  {kind}: {count}" for kind, count in self.counts().items()]
        lines += [f"  not checked: {kind} ({why})" for kind, why in self.unchecked.items()]
        s = self.stats
        lines += [
            f"sends: {s.sends_invoked} invoked, {s.sends_ok} ok, {s.sends_fail} fail, "
            f"{s.sends_info} info; txns: {s.txns_committed} committed, {s.txns_aborted} aborted, "
            f"{s.txns_unknown} unknown",
            f"polls: {s.polls} ({s.values_read} values), final read: {s.final_read_values} "
            f"values; commits: {s.commits}; faults: {s.faults}; "
            f"acks after the last heal: {s.acks_after_heal}",
        ]
        return "\n".join(lines)


class _Record(NamedTuple):
    """One record a read returned, or one acknowledged send's position."""

    topic: str
    partition: int
    offset: int
    value: Any
    process: str
    event_index: int
    """The event that saw it (the poll's, the final read's, the send's ok)."""
    key: Any
    """The value, hashable (:func:`_value_key`)."""


class _Write(NamedTuple):
    """One value a send or a transaction wrote (``offset`` only for an acknowledged send)."""

    topic: str
    partition: int | None
    offset: int | None
    value: Any
    process: str
    f: str
    outcome: str
    invoked: int
    """The invoke's index (the completion's if there was no invoke)."""
    event_index: int
    """The completion's index."""


_T = TypeVar("_T")


def check(history: Sequence[Event], *, min_acks_after_heal: int = 0) -> CheckResult:
    """Names every anomaly in ``history``; ``no-progress`` is judged only when
    ``min_acks_after_heal`` is positive."""
    run = _Run(list(operations(history)))
    found: dict[str, list[Anomaly]] = defaultdict(list)
    for anomaly in _anomalies(run, min_acks_after_heal):
        found[anomaly.kind].append(anomaly)
    return CheckResult(
        anomalies={kind: tuple(found[kind]) for kind in KINDS if found[kind]},
        stats=run.stats(),
        unchecked=_unchecked(run, min_acks_after_heal),
    )


def _anomalies(run: _Run, min_acks_after_heal: int) -> Iterator[Anomaly]:
    if run.final_complete:
        yield from _lost_writes(run)
        yield from _bank(run)
    yield from _duplicates(run)
    yield from _inconsistent_offsets(run)
    yield from _nonmonotonic_sends(run)
    yield from _poll_order(run)
    yield from _aborted_reads(run)
    yield from _unexpected(run)
    yield from _offset_regressions(run)
    yield from _lost_topics(run)
    if min_acks_after_heal > 0 and run.acks_after_heal < min_acks_after_heal:
        yield _no_progress(run, min_acks_after_heal)


def _unchecked(run: _Run, min_acks_after_heal: int) -> dict[str, str]:
    unchecked: dict[str, str] = {}
    if not run.final_complete:
        why = "no complete final read"
        unchecked["lost-write"] = why
        if run.transfers:
            unchecked |= dict.fromkeys(_BANK_KINDS, why)
    if not run.by_f["final-topics"]:
        unchecked["lost-topic"] = "no final-topics event"
    if min_acks_after_heal <= 0:
        unchecked["no-progress"] = "min_acks_after_heal is 0"
    return unchecked


class _Run:
    """The history's operations, sorted by kind, and what several checks derive from them."""

    def __init__(self, ops: list[Operation]) -> None:
        self.by_f: dict[str, list[Operation]] = defaultdict(list)
        for operation in ops:
            self.by_f[operation.f].append(operation)
        final_reads = [op for op in self.by_f["final-read"] if op.type == "ok"]
        self.final = [record for op in final_reads for record in _records(op)]
        self.final_complete = bool(final_reads) and all(
            bool(op.value.get("complete")) for op in final_reads
        )
        self.polls = [op for op in self.by_f["poll"] if op.type == "ok"]
        self.reads = [record for op in self.polls for record in _records(op)]
        heals = [op.index for op in self.by_f["fault"] if op.type == "ok"]
        self.last_heal = max(heals, default=-1)

    @cached_property
    def writes(self) -> list[_Write]:
        """Every value sent or written by a transaction, whatever the outcome."""
        found = [_sent(op) for op in self.by_f["send"]]
        found += [write for op in self.by_f["txn"] for write in _txn_writes(op)]
        return found

    @cached_property
    def transfers(self) -> dict[str, list[_Attempt]]:
        """Each transfer's attempts: the transactions that applied it (a retry is another)."""
        found: dict[str, list[_Attempt]] = defaultdict(list)
        for op in self.by_f["txn"]:
            for transfer in op.value.get("transfers", ()):
                found[str(transfer["id"])].append(_Attempt(op, transfer))
        return found

    @cached_property
    def acks(self) -> list[_Record]:
        """Acknowledged sends, at the position the broker gave them, in invoke order."""
        writes = sorted(self.writes, key=lambda write: write.invoked)
        return [ack for ack in map(_ack, writes) if ack is not None]

    def read_records(self) -> Iterator[_Record]:
        """What the polls and the final read returned."""
        return itertools.chain(self.reads, self.final)

    def observations(self) -> Iterator[_Record]:
        """Every position seen: by acks, polls and the final read."""
        return itertools.chain(self.acks, self.reads, self.final)

    @cached_property
    def seen_offsets(self) -> dict[tuple[str, int], list[int]]:
        """Per partition, the sorted offsets any ack or read saw a record at."""
        offsets: dict[tuple[str, int], set[int]] = defaultdict(set)
        for record in self.observations():
            offsets[record.topic, record.partition].add(record.offset)
        return {partition: sorted(found) for partition, found in offsets.items()}

    @cached_property
    def acks_after_heal(self) -> int:
        return sum(
            1
            for op in self.by_f["send"] + self.by_f["txn"]
            if op.type == "ok" and op.index > self.last_heal
        )

    def stats(self) -> Stats:
        sends, txns = self.by_f["send"], self.by_f["txn"]
        return Stats(
            sends_invoked=sum(1 for op in sends if op.invoke is not None),
            sends_ok=_count(sends, "ok"),
            sends_fail=_count(sends, "fail"),
            sends_info=_count(sends, "info"),
            polls=len(self.polls),
            values_read=len(self.reads),
            final_read_values=len(self.final),
            commits=_count(self.by_f["commit"], "ok"),
            txns_committed=_count(txns, "ok"),
            txns_aborted=_count(txns, "fail"),
            txns_unknown=_count(txns, "info"),
            faults=sum(1 for op in self.by_f["fault"] if op.invoke is not None),
            acks_after_heal=self.acks_after_heal,
        )


class _Attempt(NamedTuple):
    """One transaction's application of one transfer."""

    op: Operation
    transfer: Mapping[str, Any]

    def legs(self) -> set[Any]:
        """The legs this transaction wrote for the transfer."""
        prefix = f"{self.transfer['id']}:"
        return {value for *_, value in _writes(self.op) if str(value).startswith(prefix)}


def _count(ops: Iterable[Operation], outcome: str) -> int:
    return sum(1 for op in ops if op.type == outcome)


def _records(op: Operation) -> Iterator[_Record]:
    process, index = op.process, op.index
    for topic, partition, offset, value in op.value.get("records", ()):
        yield _Record(topic, partition, offset, value, process, index, _value_key(value))


def _sent(op: Operation) -> _Write:
    value = op.value
    return _Write(
        topic=value["topic"],
        partition=value.get("partition"),
        offset=value.get("offset") if op.type == "ok" else None,
        value=value["value"],
        process=op.process,
        f="send",
        outcome=op.type,
        invoked=_invoked(op),
        event_index=op.index,
    )


def _ack(write: _Write) -> _Record | None:
    if write.f != "send" or write.outcome != "ok":
        return None
    if write.partition is None or write.offset is None:
        return None
    return _Record(
        write.topic,
        write.partition,
        write.offset,
        write.value,
        write.process,
        write.event_index,
        _value_key(write.value),
    )


def _txn_writes(op: Operation) -> Iterator[_Write]:
    for topic, partition, value in _writes(op):
        yield _Write(
            topic, partition, None, value, op.process, "txn", op.type, _invoked(op), op.index
        )


def _invoked(op: Operation) -> int:
    return op.index if op.invoke is None else op.invoke.index


_UNHASHABLE: Final = (list, dict)


def _value_key(value: Any) -> Any:
    """A hashable stand-in for a JSON value (lists and objects by their JSON text)."""
    if type(value) in _UNHASHABLE:
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return value


def _lost_writes(run: _Run) -> Iterator[Anomaly]:
    read = {record.key for record in run.final}
    for write in run.writes:
        if write.outcome == "ok" and _value_key(write.value) not in read:
            where = f"{write.topic}/{write.partition}"
            if write.offset is not None:
                where += f"@{write.offset}"
            how = "acknowledged at" if write.f == "send" else "committed to"
            yield Anomaly(
                "lost-write",
                f"{write.value!r} ({write.f} by {write.process}, {how} {where}) "
                "is not in the final read",
                {
                    "topic": write.topic,
                    "partition": write.partition,
                    "offset": write.offset,
                    "value": write.value,
                    "writer": write.f,
                    "process": write.process,
                    "index": write.event_index,
                },
            )


def _duplicates(run: _Run) -> Iterator[Anomaly]:
    for records in _conflicts((r.key, r[:3], r) for r in run.observations()):
        yield Anomaly(
            "duplicate",
            f"{records[0].value!r} is at {len(records)} positions: "
            + ", ".join(f"{r.topic}/{r.partition}@{r.offset}" for r in records[:5]),
            {
                "value": records[0].value,
                "positions": [list(r[:3]) for r in records[:_MAX_LISTED]],
                "count": len(records),
                "indexes": [r.event_index for r in records[:_MAX_LISTED]],
            },
        )


def _inconsistent_offsets(run: _Run) -> Iterator[Anomaly]:
    for records in _conflicts((r[:3], r.key, r) for r in run.observations()):
        topic, partition, offset = records[0][:3]
        yield Anomaly(
            "inconsistent-offsets",
            f"{topic}/{partition}@{offset} holds {len(records)} values: "
            + ", ".join(repr(r.value) for r in records[:5]),
            {
                "topic": topic,
                "partition": partition,
                "offset": offset,
                "values": [r.value for r in records[:_MAX_LISTED]],
                "processes": [r.process for r in records[:_MAX_LISTED]],
                "indexes": [r.event_index for r in records[:_MAX_LISTED]],
            },
        )


def _conflicts(triples: Iterable[tuple[Any, Any, _Record]]) -> Iterator[list[_Record]]:
    """Of ``(key, distinct, record)`` triples, the records sharing a key that differ in
    ``distinct``: the first record seen of each difference, in the order they were seen."""
    first: dict[Any, tuple[Any, _Record]] = {}
    groups: dict[Any, dict[Any, _Record]] = {}
    for key, distinct, record in triples:
        seen = first.setdefault(key, (distinct, record))
        if seen[0] != distinct:
            groups.setdefault(key, {seen[0]: seen[1]}).setdefault(distinct, record)
    for group in groups.values():
        yield sorted(group.values(), key=lambda record: record.event_index)


def _nonmonotonic_sends(run: _Run) -> Iterator[Anomaly]:
    streams: dict[tuple[str, str, int], list[_Record]] = defaultdict(list)
    for ack in run.acks:
        streams[ack.process, ack.topic, ack.partition].append(ack)
    for (process, topic, partition), stream in streams.items():
        for earlier, later in itertools.pairwise(stream):
            if later.offset <= earlier.offset:
                yield Anomaly(
                    "nonmonotonic-send",
                    f"{process} sent {later.value!r} after {earlier.value!r} but it was "
                    f"acknowledged at {topic}/{partition}@{later.offset}, not after "
                    f"@{earlier.offset}",
                    _step_details(earlier, later),
                )


def _step_details(earlier: _Record, later: _Record) -> dict[str, Any]:
    """Two records of one process and partition, one after the other."""
    return {
        "process": later.process,
        "topic": later.topic,
        "partition": later.partition,
        "offsets": [earlier.offset, later.offset],
        "values": [earlier.value, later.value],
        "indexes": [earlier.event_index, later.event_index],
    }


def _poll_order(run: _Run) -> Iterator[Anomaly]:
    """``nonmonotonic-poll`` and ``poll-skip``: each consumer's reads of each partition, from
    one record to the next, unless an ``assign`` of that consumer came in between."""
    assigns: dict[str, list[int]] = defaultdict(list)
    for op in run.by_f["assign"]:
        assigns[op.process].append(op.index)
    last: dict[tuple[str, str, int], _Record] = {}
    for record in run.reads:
        stream = (record.process, record.topic, record.partition)
        previous = last.get(stream)
        last[stream] = record
        if previous is None or record.offset == previous.offset + 1:
            continue
        if not _between(assigns.get(record.process, []), previous, record):
            yield from _poll_step(run, previous, record)


def _between(indexes: list[int], earlier: _Record, later: _Record) -> bool:
    """Whether one of the sorted event ``indexes`` falls between two records' events."""
    after = bisect.bisect_right(indexes, earlier.event_index)
    return after < len(indexes) and indexes[after] < later.event_index


def _poll_step(run: _Run, previous: _Record, record: _Record) -> Iterator[Anomaly]:
    topic, partition, process = record.topic, record.partition, record.process
    if record.offset <= previous.offset:
        yield Anomaly(
            "nonmonotonic-poll",
            f"{process} read {topic}/{partition}@{record.offset} after @{previous.offset}",
            _step_details(previous, record),
        )
        return
    seen = run.seen_offsets[topic, partition]
    low = bisect.bisect_right(seen, previous.offset)
    high = bisect.bisect_left(seen, record.offset)
    if high > low:
        skipped = {"skipped": seen[low : min(high, low + _MAX_LISTED)], "count": high - low}
        yield Anomaly(
            "poll-skip",
            f"{process} read {topic}/{partition}@{record.offset} after @{previous.offset}, "
            f"skipping records seen elsewhere at {high - low} offsets",
            _step_details(previous, record) | skipped,
        )


def _aborted_reads(run: _Run) -> Iterator[Anomaly]:
    failed = {_value_key(w.value): w for w in run.writes if w.outcome == "fail"}
    for write in run.writes:
        if write.outcome != "fail":
            failed.pop(_value_key(write.value), None)
    for write, records in _reads_of(run, failed).items():
        yield Anomaly(
            "aborted-read",
            f"{write.value!r} ({write.f} by {write.process} failed) was read "
            f"({len(records)} reads)",
            _read_details(write.value, records)
            | {"writer": write.f, "process": write.process, "index": write.event_index},
        )


def _unexpected(run: _Run) -> Iterator[Anomaly]:
    written = {_value_key(write.value) for write in run.writes}
    unexpected: dict[Any, Any] = {}
    for record in run.read_records():
        key = record.key
        if key not in written:
            unexpected.setdefault(key, record.value)
    for value, records in _reads_of(run, unexpected).items():
        yield Anomaly(
            "unexpected",
            f"{value!r} was read but nobody wrote it ({len(records)} reads)",
            _read_details(value, records),
        )


def _reads_of(run: _Run, values: Mapping[Any, _T]) -> dict[_T, list[_Record]]:
    """The polls' and final read's records of each of ``values`` (keyed by :func:`_value_key`)."""
    found: dict[_T, list[_Record]] = {}
    if values:
        for record in run.read_records():
            key = record.key
            if key in values:
                found.setdefault(values[key], []).append(record)
    return found


def _read_details(value: Any, records: Sequence[_Record]) -> dict[str, Any]:
    return {
        "value": value,
        "reads": [[*r[:3], r.process, r.event_index] for r in records[:_MAX_LISTED]],
        "count": len(records),
    }


def _offset_regressions(run: _Run) -> Iterator[Anomaly]:
    highest: dict[tuple[str, str, int], tuple[int, Operation]] = {}
    for op in run.by_f["commit"]:
        if op.type != "ok":
            continue
        group = op.value["group"]
        for topic, partition, offset in op.value.get("offsets", ()):
            key = (group, topic, partition)
            previous = highest.get(key)
            if previous is None or offset >= previous[0]:
                highest[key] = (offset, op)
                continue
            yield Anomaly(
                "offset-regression",
                f"group {group} committed {topic}/{partition} at {offset} after {previous[0]}",
                {
                    "group": group,
                    "topic": topic,
                    "partition": partition,
                    "offsets": [previous[0], offset],
                    "processes": [previous[1].process, op.process],
                    "indexes": [previous[1].index, op.index],
                },
            )


def _no_progress(run: _Run, required: int) -> Anomaly:
    return Anomaly(
        "no-progress",
        f"{run.acks_after_heal} sends or transactions acknowledged after the last fault "
        f"healed, fewer than {required}",
        {"acks": run.acks_after_heal, "required": required, "last_heal_index": run.last_heal},
    )


_LEG: Final = re.compile(r"(?P<id>[^:]+):(?P<account>[^:]+):(?P<delta>[+-]?\d+)")
"""A bank leg's value: ``"<transfer id>:<account>:<delta>"``."""


def _bank(run: _Run) -> Iterator[Anomaly]:
    """The bank's checks over the final read of the topics transfers wrote their legs to."""
    if not run.transfers:
        return
    topics = {
        write[0]
        for attempts in run.transfers.values()
        for attempt in attempts
        for write in _writes(attempt.op)
    }
    legs: dict[str, list[_Record]] = defaultdict(list)
    total = 0
    for record in run.final:
        leg = _LEG.fullmatch(record.value) if isinstance(record.value, str) else None
        if record.topic in topics and leg is not None:
            legs[leg["id"]].append(record)
            total += int(leg["delta"])
    for transfer_id, attempts in run.transfers.items():
        yield from _transfer(transfer_id, attempts, legs.get(transfer_id, []))
    if total != 0:
        yield Anomaly(
            "wrong-total",
            f"the visible legs sum to {total}, not 0",
            {"total": total, "legs": sum(len(found) for found in legs.values())},
        )


def _transfer(
    transfer_id: str, attempts: Sequence[_Attempt], legs: Sequence[_Record]
) -> Iterator[Anomaly]:
    transfer = attempts[0].transfer
    details = {
        "transfer": transfer_id,
        "from": transfer.get("from"),
        "to": transfer.get("to"),
        "amount": transfer.get("amount"),
        "outcomes": [a.op.type for a in attempts],
        "processes": [a.op.process for a in attempts],
        "indexes": [a.op.index for a in attempts],
        "legs": [list(leg[:4]) for leg in legs[:_MAX_LISTED]],
    }
    visible = [leg.value for leg in legs]
    if not visible and any(a.op.type == "ok" for a in attempts):
        yield Anomaly(
            "lost-transfer", f"transfer {transfer_id} committed but no leg is visible", details
        )
    if len(visible) > len(set(visible)):
        yield Anomaly(
            "duplicate-transfer",
            f"transfer {transfer_id} is applied more than once ({len(visible)} legs visible)",
            details,
        )
    missing = set().union(*(a.legs() for a in attempts)) - set(visible)
    if visible and missing:
        yield Anomaly(
            "non-atomic-transfer",
            f"transfer {transfer_id} is half-applied: {sorted(missing)} not visible",
            details | {"missing": sorted(missing)},
        )


def _lost_topics(run: _Run) -> Iterator[Anomaly]:
    """Topics whose creation was acknowledged and that the cluster does not have."""
    finals = [op for op in run.by_f["final-topics"] if op.type == "ok"]
    if not finals:
        return
    existing = {topic for op in finals for topic in op.value["topics"]}
    for op in run.by_f["create-topic"]:
        topic = op.value["topic"]
        if op.type == "ok" and topic not in existing:
            yield Anomaly(
                "lost-topic",
                f"topic {topic!r} was created (acknowledged) and does not exist afterwards",
                {"topic": topic, "process": op.process, "index": op.index},
            )


def _writes(op: Operation) -> list[list[Any]]:
    """A transaction's writes: ``[topic, partition, value]`` each."""
    writes: list[list[Any]] = op.value.get("writes", [])
    return writes
