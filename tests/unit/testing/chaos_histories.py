"""Hand-made chaos histories for the checker's and the report's tests."""

from __future__ import annotations

from typing import Any

from strom.testing.chaos.history import Event, EventType, History


class HistoryBuilder:
    """Appends events as workloads would record them, each ``step`` seconds after the last."""

    def __init__(self, step: float = 0.01) -> None:
        self.events: History = []
        self.step = step

    def event(
        self, process: str, type_: EventType, f: str, value: Any, error: str | None = None
    ) -> Event:
        time = round(len(self.events) * self.step, 6)  # as history.jsonl keeps it
        event = Event(len(self.events), time, process, type_, f, value, error)
        self.events.append(event)
        return event

    def send(
        self,
        process: str,
        topic: str,
        partition: int,
        value: Any,
        offset: int | None = None,
        outcome: EventType = "ok",
    ) -> None:
        """A send, invoked and completed; ``ok`` needs the ``offset``."""
        written = {"topic": topic, "partition": partition, "value": value}
        self.event(process, "invoke", "send", written)
        acked = written | {"offset": offset} if outcome == "ok" else written
        self.event(process, outcome, "send", acked)

    def poll(self, process: str, *records: tuple[str, int, int, Any]) -> None:
        self.event(process, "ok", "poll", {"records": [list(r) for r in records]})

    def assign(self, process: str, *partitions: tuple[str, int]) -> None:
        self.event(process, "ok", "assign", {"partitions": [list(p) for p in partitions]})

    def create_topic(self, process: str, topic: str, outcome: EventType = "ok") -> None:
        self.event(process, "invoke", "create-topic", {"topic": topic})
        self.event(process, outcome, "create-topic", {"topic": topic})

    def final_read(self, *records: tuple[str, int, int, Any], complete: bool = True) -> None:
        value = {"records": [list(r) for r in records], "complete": complete}
        self.event("final-reader", "ok", "final-read", value)

    def txn(
        self,
        process: str,
        writes: list[tuple[str, int, Any]],
        outcome: EventType = "ok",
        transfer: dict[str, Any] | None = None,
    ) -> None:
        value: dict[str, Any] = {"writes": [list(w) for w in writes]}
        if transfer is not None:
            value["transfers"] = [transfer]
        self.event(process, "invoke", "txn", value)
        self.event(process, outcome, "txn", None)

    def transfer(
        self,
        process: str,
        id_: int,
        source: str,
        target: str,
        amount: int,
        outcome: EventType = "ok",
        topic: str = "bank",
    ) -> None:
        """A bank transfer: one transaction writing the two legs to ``topic``'s partition 0."""
        legs = [(topic, 0, f"{id_}:{source}:{-amount}"), (topic, 0, f"{id_}:{target}:{amount}")]
        details = {"id": id_, "from": source, "to": target, "amount": amount}
        self.txn(process, legs, outcome, transfer=details)

    def commit(
        self,
        process: str,
        group: str,
        offsets: list[tuple[str, int, int]],
        outcome: EventType = "ok",
    ) -> None:
        value = {"group": group, "offsets": [list(o) for o in offsets]}
        self.event(process, "invoke", "commit", value)
        self.event(process, outcome, "commit", value)

    def fault_start(self, name: str, targets: Any = None) -> None:
        self.event("nemesis", "invoke", "fault", {"name": name, "targets": targets})

    def fault_heal(self, name: str, targets: Any = None) -> None:
        self.event("nemesis", "ok", "fault", {"name": name, "targets": targets})


def every_anomaly() -> HistoryBuilder:
    """A history with at least one anomaly of each kind (``no-progress`` when at least one ack
    after the heal is required)."""
    b = HistoryBuilder()
    for offset, value in enumerate("abcd"):
        b.send("producer-0", "t", 0, value, offset)
    b.send("producer-0", "t", 0, "e", 2)  # nonmonotonic-send, inconsistent-offsets
    b.txn("txn-0", [("t", 1, "x")], outcome="fail")
    b.poll("consumer-0", ("t", 0, 0, "a"), ("t", 0, 2, "c"))  # poll-skip
    b.poll("consumer-0", ("t", 0, 1, "b"), ("t", 1, 0, "x"))  # nonmonotonic-poll, aborted-read
    b.poll("consumer-1", ("t", 0, 4, "a"), ("t", 0, 5, "z"))  # duplicate, unexpected
    b.commit("consumer-0", "g", [("t", 0, 3)])
    b.commit("consumer-1", "g", [("t", 0, 1)])  # offset-regression
    b.transfer("bank-0", 1, "a1", "a2", 5)  # non-atomic-transfer, wrong-total
    b.transfer("bank-0", 2, "a2", "a3", 1)  # duplicate-transfer
    b.transfer("bank-0", 3, "a3", "a1", 2)  # lost-transfer
    b.create_topic("creator", "kept")
    b.create_topic("creator", "vanished")  # lost-topic
    b.fault_start("partition", ["broker-1"])
    b.fault_heal("partition", ["broker-1"])
    b.event("final-reader", "ok", "final-topics", {"topics": ["t", "bank", "kept"]})
    legs = ["1:a1:-5", "2:a2:-1", "2:a3:1", "2:a2:-1", "2:a3:1"]
    b.final_read(
        *[("t", 0, offset, value) for offset, value in enumerate("acd")],  # lost-write: b
        *[("bank", 0, offset, leg) for offset, leg in enumerate(legs)],
    )
    return b
