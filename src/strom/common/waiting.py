"""Waiting with a timeout that never loses a cancellation.

Python 3.11's ``asyncio.wait_for`` can swallow a cancellation that arrives just as what it
waits for completes (gh-86296): a task asked to stop then goes on, and a broker's shutdown
hangs on it. ``asyncio.timeout`` has no such race; this is the event wait the background loops
share, built on it.
"""

from __future__ import annotations

import asyncio

__all__ = ["wait_event"]


async def wait_event(event: asyncio.Event, timeout: float | None) -> bool:
    """Until ``event`` is set (True) or ``timeout`` seconds pass (False; None: no limit)."""
    try:
        async with asyncio.timeout(timeout):
            await event.wait()
    except TimeoutError:
        return False
    return True
