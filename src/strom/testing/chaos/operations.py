"""A history's events paired into operations (an invoke with its completion), and the nemesis's
fault windows: what the checker and the report read instead of raw events.

Pairing follows Jepsen: a completion ends its process's pending invoke of the same ``f``. A
client with several operations of one kind in flight (an asynchronous producer) is allowed: the
completion then ends the oldest pending invoke whose value agrees with its own (equal on every
key both carry, a null at invoke matching anything, e.g. the partition the partitioner chose).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from strom.testing.chaos.history import Event

__all__ = ["FaultWindow", "Operation", "fault_windows", "operations"]


@dataclass(frozen=True, slots=True)
class Operation:
    """One operation: its invoke (``None`` for ok-only operations such as ``poll``) and its
    completion (``None``: never completed, which Jepsen counts as ``info``); ``value`` is the
    invoke's value updated with the completion's."""

    invoke: Event | None
    completion: Event | None
    value: Any

    @property
    def event(self) -> Event:
        """The completion, or the invoke of an operation never completed."""
        event = self.completion or self.invoke
        assert event is not None, "an operation has an invoke or a completion"
        return event

    @property
    def f(self) -> str:
        return self.event.f

    @property
    def process(self) -> str:
        return self.event.process

    @property
    def type(self) -> str:
        """How it ended: ``ok``, ``fail`` or ``info`` (also when it never completed)."""
        return "info" if self.completion is None else self.completion.type

    @property
    def index(self) -> int:
        """The completion's index (the invoke's when it never completed)."""
        return self.event.index


@dataclass(frozen=True, slots=True)
class FaultWindow:
    """A fault from the nemesis's invoke to its heal (``end`` is ``None``: never healed)."""

    name: str
    targets: Any
    start: float
    end: float | None
    start_index: int
    end_index: int | None


def operations(history: Sequence[Event]) -> Iterator[Operation]:
    """Each completion with the invoke it ends, in completion order, then the invokes never
    completed (a crashed client's operations: indeterminate), in invoke order."""
    pending: dict[tuple[str, str], list[Event]] = {}
    for event in history:
        key = (event.process, event.f)
        if event.type == "invoke":
            pending.setdefault(key, []).append(event)
            continue
        invoke = _take_matching(pending.get(key), event.value)
        yield Operation(invoke, event, _merged(invoke, event))
    never_completed = sorted(
        (invoke for invokes in pending.values() for invoke in invokes),
        key=lambda invoke: invoke.index,
    )
    for invoke in never_completed:
        yield Operation(invoke, None, invoke.value)


def fault_windows(history: Sequence[Event]) -> list[FaultWindow]:
    """The nemesis's faults in the order they started. A fault's completion ends its window
    (``ok``: healed; ``fail`` or ``info``: the nemesis gave up on it); one never completed has
    no end."""
    windows = [
        _window(operation.invoke, operation.completion)
        for operation in operations(history)
        if operation.f == "fault" and operation.invoke is not None
    ]
    return sorted(windows, key=lambda window: window.start_index)


def _window(invoke: Event, heal: Event | None) -> FaultWindow:
    value = invoke.value if isinstance(invoke.value, dict) else {}
    return FaultWindow(
        name=str(value.get("name", "fault")),
        targets=value.get("targets"),
        start=invoke.time,
        end=None if heal is None else heal.time,
        start_index=invoke.index,
        end_index=None if heal is None else heal.index,
    )


def _take_matching(candidates: list[Event] | None, value: Any) -> Event | None:
    """Removes and returns the oldest candidate whose value agrees with ``value`` (the oldest of
    all if none does)."""
    if not candidates:
        return None
    if len(candidates) == 1:
        return candidates.pop()
    for position, invoke in enumerate(candidates):
        if _agrees(invoke.value, value):
            return candidates.pop(position)
    return candidates.pop(0)


def _agrees(invoked: Any, completed: Any) -> bool:
    if not isinstance(invoked, dict) or not isinstance(completed, dict):
        return True
    return all(
        invoked[key] is None or invoked[key] == completed[key]
        for key in invoked.keys() & completed.keys()
    )


def _merged(invoke: Event | None, completion: Event) -> Any:
    if invoke is None:
        return completion.value
    if isinstance(invoke.value, dict) and isinstance(completion.value, dict):
        return invoke.value | completion.value
    return invoke.value if completion.value is None else completion.value
