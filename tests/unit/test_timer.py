"""The virtual timer runs callbacks at their own time, in due order, and never a cancelled one."""

from __future__ import annotations

from strom.common.clock import ManualClock
from strom.common.timer import ManualTimer


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
