"""The event loop: uvloop where it is installed, asyncio's own otherwise."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["new_event_loop", "run"]

T = TypeVar("T")


def new_event_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop  # noqa: PLC0415 - optional dependency
    except ImportError:  # pragma: no cover - installed wherever it can be
        return asyncio.new_event_loop()
    loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
    return loop


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` on ``new_event_loop()``."""
    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        return runner.run(main)
