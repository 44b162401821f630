"""A produce stream's answers (``strom.rest.answers.StreamAnswers``): written in the order of
the records whatever order their reports come in, with at most ``limit`` records waiting."""

from __future__ import annotations

import asyncio
import json
import random

from strom.rest.answers import StreamAnswers


def test_answers_come_in_record_order_whatever_order_they_are_filled() -> None:
    async def run() -> list[int]:
        answers = StreamAnswers(limit=1000)
        slots = [await answers.reserve() for _ in range(200)]
        order = slots[:]
        random.Random(3).shuffle(order)

        async def report() -> None:  # delivery reports, a few at a time
            for start in range(0, len(order), 7):
                for slot in order[start : start + 7]:
                    answers.fill(slot, {"offset": slot})
                await asyncio.sleep(0)
            answers.finish()

        reporter = asyncio.ensure_future(report())
        written: list[int] = []
        while (chunk := await answers.next_chunk()) is not None:
            written += [json.loads(line)["offset"] for line in chunk.splitlines()]
        await reporter
        return written

    assert asyncio.run(run()) == list(range(200))


def test_a_stream_waits_for_room_when_limit_records_wait() -> None:
    async def run() -> tuple[bool, bool]:
        answers = StreamAnswers(limit=2)
        await answers.reserve()
        await answers.reserve()
        third = asyncio.ensure_future(answers.reserve())
        await asyncio.sleep(0.01)
        blocked = not third.done()
        answers.fill(0, {"offset": 0})
        await answers.next_chunk()
        await asyncio.wait_for(third, 1)
        return blocked, third.done()

    assert asyncio.run(run()) == (True, True)


def test_records_taken_together_reserve_their_slots_at_once() -> None:
    async def run() -> tuple[int, int, bool]:
        answers = StreamAnswers(limit=3)
        first = await answers.reserve(5)  # more than the limit, none waiting: at once
        later = asyncio.ensure_future(answers.reserve(2))
        await asyncio.sleep(0.01)
        blocked = not later.done()
        for slot in range(5):
            answers.fill(slot, {"offset": slot})
        await answers.next_chunk()
        return first, await asyncio.wait_for(later, 1), blocked

    assert asyncio.run(run()) == (0, 5, True)
