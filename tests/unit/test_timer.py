"""The virtual timer runs callbacks at their own time, in due order, and never a cancelled one;
a Wakeup ends at a wake or at its timeout on that time."""

from __future__ import annotations

import asyncio

from strom.common.clock import ManualClock
from strom.common.timer import ManualTimer, Wakeup, sleep


def test_callbacks_run_at_their_due_time_in_order_and_cancelled_ones_never() -> None:
    clock = ManualClock()
    timer = ManualTimer(clock)
    ran: list[tuple[str, int]] = []
    timer.call_later(30, lambda: ran.append(("c", clock.monotonic_ms())))
    timer.call_later(10, lambda: ran.append(("a", clock.monotonic_ms())))
    timer.call_later(10, lambda: ran.append(("b", clock.monotonic_ms())))
    timer.call_later(20, lambda: ran.append(("x", clock.monotonic_ms()))).cancel()
    assert timer.next_due_ms() == 10
    timer.advance_to(25)
    assert ran == [("a", 10), ("b", 10)]
    assert clock.monotonic_ms() == 25
    assert timer.next_due_ms() == 30
    timer.advance_to(100)
    assert ran[-1] == ("c", 30)
    assert timer.next_due_ms() is None


def test_a_wakeup_ends_at_its_wake_or_its_timeout_on_the_timer() -> None:
    clock = ManualClock()
    timer = ManualTimer(clock)

    async def run() -> list[object]:
        wakeup = Wakeup(timer)
        woken = asyncio.create_task(wakeup.wait(1_000))
        await asyncio.sleep(0)
        wakeup.wake()
        timed_out = asyncio.create_task(Wakeup(timer).wait(50))
        slept = asyncio.create_task(sleep(timer, 70))
        await asyncio.sleep(0)
        timer.advance_to(60)
        await asyncio.sleep(0)
        done = [await woken, await timed_out, slept.done()]
        timer.advance_to(70)
        await slept
        return [*done, timer.next_due_ms()]

    # woken early; timed out at 50 ms; the sleep still on at 60 ms; no timer left behind
    assert asyncio.run(run()) == [True, False, False, None]
