"""Timers as an argument: what waits for a deadline takes a Timer, so a simulation can run it
on virtual time (:class:`ManualTimer` over a ``ManualClock``) and the server on the event
loop's (:class:`LoopTimer`)."""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable
from typing import Protocol

from strom.common.clock import ManualClock

__all__ = ["LoopTimer", "ManualTimer", "Timer", "TimerHandle", "Wakeup", "sleep"]


class TimerHandle(Protocol):
    def cancel(self) -> None:
        """The callback will not run (no-op once it ran)."""
        ...


class Timer(Protocol):
    def call_later(self, delay_ms: int, callback: Callable[[], object]) -> TimerHandle:
        """Run ``callback()`` once, ``delay_ms`` milliseconds from now."""
        ...


class LoopTimer:
    """The real timer: the running event loop's ``call_later``."""

    def call_later(self, delay_ms: int, callback: Callable[[], object]) -> TimerHandle:
        return asyncio.get_running_loop().call_later(delay_ms / 1000, callback)


async def sleep(timer: Timer, delay_ms: int) -> None:
    """``asyncio.sleep`` on ``timer``'s time."""
    await Wakeup(timer).wait(delay_ms)


class Wakeup:
    """What a background loop sleeps on: :meth:`wait` returns when :meth:`wake` is called or
    its timeout passes on the timer, whichever comes first (an ``asyncio.Event`` waited with a
    timeout, on a Timer's time)."""

    def __init__(self, timer: Timer) -> None:
        self._timer = timer
        self._waiter: asyncio.Future[bool] | None = None

    def wake(self) -> None:
        """End the wait in progress, if any (True)."""
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(True)

    async def wait(self, timeout_ms: int | None) -> bool:
        """Until :meth:`wake` (True) or ``timeout_ms`` (False; None: no limit)."""
        waiter: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiter = waiter

        def expire() -> None:
            if not waiter.done():
                waiter.set_result(False)

        handle = None if timeout_ms is None else self._timer.call_later(timeout_ms, expire)
        try:
            return await waiter
        finally:
            self._waiter = None
            if handle is not None:
                handle.cancel()


class _ManualHandle:
    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualTimer:
    """Virtual time: callbacks run when :meth:`advance_to` moves the clock past their due
    time, in due order (ties in the order they were set)."""

    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock
        self._due: list[tuple[int, int, _ManualHandle, Callable[[], object]]] = []
        self._sequence = itertools.count()

    def call_later(self, delay_ms: int, callback: Callable[[], object]) -> TimerHandle:
        handle = _ManualHandle()
        due = self.clock.monotonic_ms() + max(0, delay_ms)
        heapq.heappush(self._due, (due, next(self._sequence), handle, callback))
        return handle

    def next_due_ms(self) -> int | None:
        """The monotonic time of the next callback still to run, if any."""
        while self._due and self._due[0][2].cancelled:
            heapq.heappop(self._due)
        return self._due[0][0] if self._due else None

    def advance_to(self, monotonic_ms: int) -> None:
        """Move the clock to ``monotonic_ms``, running each callback due on the way at its
        own time."""
        while (due := self.next_due_ms()) is not None and due <= monotonic_ms:
            _, _, handle, callback = heapq.heappop(self._due)
            self.clock.advance(due - self.clock.monotonic_ms())
            handle.cancelled = True
            callback()
        self.clock.advance(max(0, monotonic_ms - self.clock.monotonic_ms()))
