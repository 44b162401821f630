"""The cluster's Metadata answer of each login, asked once for every request of the next
``max_age_s`` (the topics page's rows and, right after, their records held; the cluster page;
every open page's refresh), and once for all the requests that want it while it is asked for.
With 10,000 partitions the answer costs the broker more than anything else the topics page
needs."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Final, Generic, TypeVar

__all__ = ["MAX_AGE_S", "Snapshots"]

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")
MAX_AGE_S: Final = 1.0
"""Below the page's refresh (two seconds): every refresh sees a newer answer."""


@dataclass(frozen=True)
class _Asked(Generic[T]):
    at: float
    answer: asyncio.Future[T]


class Snapshots(Generic[K, T]):
    """``fetch(key)`` answers, each reused for ``max_age_s`` from when it was asked for; one
    that failed is asked for again by the next caller."""

    def __init__(self, fetch: Callable[[K], Awaitable[T]], max_age_s: float = MAX_AGE_S) -> None:
        self._fetch = fetch
        self._max_age_s = max_age_s
        self._asked: dict[K, _Asked[T]] = {}

    async def get(self, key: K) -> T:
        now = time.monotonic()
        asked = self._asked.get(key)
        if asked is None or self._stale(asked, now):
            asked = _Asked(now, asyncio.ensure_future(self._fetch(key)))
            self._asked[key] = asked
        # shielded: a caller that goes away (a closed page) does not cancel the others' answer
        return await asyncio.shield(asked.answer)

    def _stale(self, asked: _Asked[T], now: float) -> bool:
        if not asked.answer.done():
            return False
        failed = asked.answer.cancelled() or asked.answer.exception() is not None
        return failed or now - asked.at > self._max_age_s
