"""Time as an argument: cores take a Clock so tests can drive time by hand."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Protocol


class Clock(Protocol):
    def now_ms(self) -> int:
        """Wall-clock time in milliseconds since the epoch (record timestamps)."""
        ...

    def monotonic_ms(self) -> int:
        """Monotonic time in milliseconds (timeouts and intervals)."""
        ...


class SystemClock:
    """The real clock."""

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def monotonic_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000


class ManualClock:
    """A clock that moves only when told to; for deterministic tests and simulations."""

    def __init__(self, now_ms: int = 1_700_000_000_000) -> None:
        self._now_ms = now_ms
        self._monotonic_ms = 0

    def now_ms(self) -> int:
        return self._now_ms

    def monotonic_ms(self) -> int:
        return self._monotonic_ms

    def advance(self, ms: int) -> None:
        self._now_ms += ms
        self._monotonic_ms += ms


CLOCK_OFFSET_FILE_ENV = "STROM_CLOCK_OFFSET_FILE"
"""Environment variable naming a file of wall-clock offset milliseconds (chaos tests)."""


class OffsetFileClock:
    """The system clock with its wall time moved by the milliseconds written in a file: the
    clock faults of chaos tests (a skewed or jumping clock), set from outside the process.

    Only wall time moves, as on a real machine whose clock is stepped; monotonic time (every
    timeout and interval) never jumps. The file is looked at again at most every 100 ms; a
    missing or unreadable file means no offset.
    """

    _RECHECK_NS = 100_000_000

    def __init__(self, path: str) -> None:
        self._path = Path(path)
        self._offset_ms = 0
        self._checked_ns = -self._RECHECK_NS

    def _offset(self) -> int:
        now_ns = time.monotonic_ns()
        if now_ns - self._checked_ns >= self._RECHECK_NS:
            self._checked_ns = now_ns
            try:
                self._offset_ms = int(self._path.read_text(encoding="ascii").strip() or 0)
            except (OSError, ValueError):
                self._offset_ms = 0
        return self._offset_ms

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000 + self._offset()

    def monotonic_ms(self) -> int:
        return time.monotonic_ns() // 1_000_000


def system_clock(environment: dict[str, str]) -> Clock:
    """The clock a server runs on: the system's, or an :class:`OffsetFileClock` when the
    environment names an offset file."""
    path = environment.get(CLOCK_OFFSET_FILE_ENV)
    return OffsetFileClock(path) if path else SystemClock()
