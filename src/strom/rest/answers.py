"""The answers of one produce stream, in the order of its records: each record takes a slot,
its answer fills the slot when its delivery report is served (on the loop, in whatever order
the reports come), and the writer takes every answer ready in order as one chunk. At most
``limit`` records wait for their answers, so a stream of any length is served in bounded
memory."""

from __future__ import annotations

import asyncio
import json

__all__ = ["StreamAnswers"]


class StreamAnswers:
    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._slots: dict[int, bytes] = {}
        self._taken = 0  # answers written
        self._reserved = 0  # records that took a slot
        self._finished = False  # no more records will come
        self._changed = asyncio.Event()
        self._room = asyncio.Event()

    async def reserve(self, count: int = 1) -> int:
        """Slots for the next ``count`` records (the first one's), once no more than ``limit``
        would wait for answers (or none waits: ``count`` may be over ``limit``)."""
        while self._reserved > self._taken and self._reserved - self._taken + count > self._limit:
            self._room.clear()
            await self._room.wait()
        self._reserved += count
        return self._reserved - count

    def fill(self, slot: int, answer: dict[str, object]) -> None:
        """The answer of the record in ``slot``."""
        self.fill_line(slot, json.dumps(answer, separators=(",", ":")).encode() + b"\n")

    def fill_line(self, slot: int, line: bytes) -> None:
        """The answer of the record in ``slot``, already a line of JSON."""
        self._slots[slot] = line
        self._changed.set()

    def finish(self) -> None:
        """No more records: the last answer ends the stream."""
        self._finished = True
        self._changed.set()

    async def next_chunk(self) -> bytes | None:
        """Every answer ready in order (waiting for the first of them); None at the end."""
        while True:
            self._changed.clear()
            ready = []
            while self._taken in self._slots:
                ready.append(self._slots.pop(self._taken))
                self._taken += 1
            if ready:
                self._room.set()
                return b"".join(ready)
            if self._finished and self._taken == self._reserved:
                return None
            await self._changed.wait()
