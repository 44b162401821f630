"""The history of a chaos run: every operation a client invoked and how it ended, and every
fault the nemesis started and stopped, in the order they happened (Jepsen's model).

An operation is recorded twice: an ``invoke`` event when a client starts it and one completion
event, ``ok`` (it happened), ``fail`` (it certainly did not happen) or ``info`` (unknown: a
timeout, a lost connection). Events carry plain JSON values so a history is a JSON-lines file a
person can read and :func:`read_history` can load again for the checker.

What each operation's ``value`` holds (``f`` names the operation):

``send`` (a producer's write)
    ``{"topic", "partition", "value"}`` at invoke (``partition`` may be null: the partitioner
    chooses); ``ok`` adds ``"offset"`` (and the partition the broker put it in).
``poll`` (a consumer's read)
    ``ok`` only: ``{"records": [[topic, partition, offset, value], ...]}``, in the order the
    client returned them.
``assign`` (a consumer's partitions changed: a rebalance or a new subscription)
    ``ok`` only: ``{"partitions": [[topic, partition], ...]}``.
``commit`` (a consumer group's offsets)
    ``{"group", "offsets": [[topic, partition, offset], ...]}``.
``txn`` (one transaction)
    ``{"writes": [[topic, partition, value], ...]}`` (``partition`` may be null), and for the
    bank ``"transfers": [{"id", "from", "to", "amount"}, ...]``; the completion says whether
    it committed (``ok``), aborted (``fail``) or is unknown (``info``).
``create-topic``
    ``{"topic"}``: ``ok`` when the cluster acknowledged the creation.
``final-read`` (the read after the faults healed that every check compares with)
    ``ok`` only: as ``poll``; ``{"complete": bool}`` tells whether it reached each partition's
    end.
``final-topics``
    ``ok`` only: ``{"topics": [...]}``, every topic the cluster has after the run.
``fault`` (the nemesis)
    ``invoke`` when a fault starts, ``ok`` when it is healed: ``{"name", "targets"}``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

__all__ = [
    "COMPLETIONS",
    "Event",
    "EventType",
    "History",
    "Recorder",
    "read_history",
    "write_history",
]

EventType = Literal["invoke", "ok", "fail", "info"]
COMPLETIONS: Final[frozenset[str]] = frozenset({"ok", "fail", "info"})


@dataclass(frozen=True, slots=True)
class Event:
    index: int
    """Position in the history (the order events were recorded in)."""
    time: float
    """Seconds since the run started."""
    process: str
    """Who did it: ``"producer-0"``, ``"consumer-1"``, ``"nemesis"``."""
    type: EventType
    f: str
    value: Any
    error: str | None = None
    """Why an operation failed or is unknown, as the client said it."""

    def to_json(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "index": self.index,
            "time": round(self.time, 6),
            "process": self.process,
            "type": self.type,
            "f": self.f,
            "value": self.value,
        }
        if self.error is not None:
            record["error"] = self.error
        return record

    @classmethod
    def from_json(cls, record: dict[str, Any]) -> Event:
        return cls(
            index=int(record["index"]),
            time=float(record["time"]),
            process=str(record["process"]),
            type=record["type"],
            f=str(record["f"]),
            value=record["value"],
            error=record.get("error"),
        )


History = list[Event]


class Recorder:
    """Collects events from any thread, stamping each with the time since the run started."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: list[Event] = []
        self._started = time.monotonic()

    def record(
        self,
        process: str,
        type_: EventType,
        f: str,
        value: Any,
        *,
        error: str | None = None,
    ) -> Event:
        with self._lock:
            event = Event(
                index=len(self._events),
                time=time.monotonic() - self._started,
                process=process,
                type=type_,
                f=f,
                value=value,
                error=error,
            )
            self._events.append(event)
            return event

    def in_flight(self, f: str, process: str) -> bool:
        """Whether ``process`` has invoked an ``f`` it has not completed yet."""
        with self._lock:
            for event in reversed(self._events):
                if event.process == process and event.f == f:
                    return event.type == "invoke"
        return False

    def elapsed(self) -> float:
        return time.monotonic() - self._started

    def history(self) -> History:
        """The events so far (a copy)."""
        with self._lock:
            return list(self._events)

    def __len__(self) -> int:
        return len(self._events)

    def __iter__(self) -> Iterator[Event]:
        return iter(self.history())


def write_history(events: Iterable[Event], path: Path) -> None:
    """One JSON object per line."""
    with path.open("w", encoding="utf-8") as file:
        for event in events:
            file.write(json.dumps(event.to_json(), separators=(",", ":")) + "\n")


def read_history(path: Path) -> History:
    with path.open(encoding="utf-8") as file:
        return [Event.from_json(json.loads(line)) for line in file if line.strip()]
