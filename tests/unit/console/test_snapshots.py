"""The console's Metadata snapshots (``strom.console.snapshots``): one fetch for every caller
within the age, and for callers that come while it is under way; a failed one and a stale one
are fetched again."""

from __future__ import annotations

import asyncio

import pytest

from strom.console.snapshots import Snapshots


class _Fetches:
    def __init__(self) -> None:
        self.calls = 0
        self.fail = False

    async def __call__(self, key: str) -> str:
        self.calls += 1
        await asyncio.sleep(0.01)
        if self.fail:
            raise ConnectionError("no broker")
        return f"{key}-{self.calls}"


def test_callers_within_the_age_share_one_fetch() -> None:
    async def scenario() -> None:
        fetches = _Fetches()
        snapshots = Snapshots(fetches, max_age_s=60)
        together = await asyncio.gather(*(snapshots.get("a") for _ in range(5)))
        assert together == ["a-1"] * 5
        assert await snapshots.get("a") == "a-1"
        assert await snapshots.get("b") == "b-2"  # each login its own
        assert fetches.calls == 2

    asyncio.run(scenario())


def test_a_stale_or_failed_answer_is_fetched_again() -> None:
    async def scenario() -> None:
        fetches = _Fetches()
        snapshots = Snapshots(fetches, max_age_s=0.05)
        assert await snapshots.get("a") == "a-1"
        await asyncio.sleep(0.1)
        fetches.fail = True
        with pytest.raises(ConnectionError):
            await snapshots.get("a")
        fetches.fail = False
        assert await snapshots.get("a") == "a-3"

    asyncio.run(scenario())


def test_a_caller_that_goes_away_does_not_cancel_the_others_answer() -> None:
    async def scenario() -> None:
        snapshots = Snapshots(_Fetches(), max_age_s=60)
        leaving = asyncio.ensure_future(snapshots.get("a"))
        staying = asyncio.ensure_future(snapshots.get("a"))
        await asyncio.sleep(0)
        leaving.cancel()
        assert await staying == "a-1"

    asyncio.run(scenario())
