"""What request handlers need of the metadata: the current image (``MetadataLoader`` has it),
and a way to wait until it shows something."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Protocol

from strom.common.waiting import wait_event
from strom.metadata import MetadataDelta, MetadataImage

__all__ = ["MetadataView", "MetadataWaiter"]


class MetadataView(Protocol):
    @property
    def image(self) -> MetadataImage:
        """The newest committed image; immutable, so a handler may keep it while it works."""
        ...


class MetadataWaiter:
    """A metadata publisher that lets coroutines wait for the image to satisfy a condition
    (a topic a controller just created reaching this broker)."""

    def __init__(self, view: MetadataView) -> None:
        self._view = view
        self._changed = asyncio.Event()

    def __call__(self, delta: MetadataDelta, image: MetadataImage) -> None:
        self._changed.set()

    async def wait_for(self, condition: Callable[[MetadataImage], bool], timeout: float) -> bool:
        """True once ``condition(image)`` holds; False if it did not within ``timeout``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not condition(self._view.image):
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            self._changed.clear()
            await wait_event(self._changed, remaining)
        return True
