"""The broker's log cleaner service: passes in a worker thread, swaps on the event loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import TypeVar

import pytest

from strom.common import TopicPartition
from strom.common.clock import ManualClock
from strom.protocol.records import Record, build_batch, iter_records
from strom.server.broker.cleaner_service import CleanerService
from strom.storage.log_config import LogConfig
from strom.storage.partition_log import PartitionLog
from strom.storage.segment import LogSegment

TP = TopicPartition("orders", 0)
KEYS = 5
T = TypeVar("T")


def run(coroutine: Callable[[], Awaitable[T]]) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(coroutine(), timeout=10)

    return asyncio.run(bounded())


@pytest.fixture
def log(tmp_path: Path) -> Iterator[PartitionLog]:
    clock = ManualClock()
    config = LogConfig(
        cleanup_policy=frozenset({"compact"}), segment_bytes=600, index_interval_bytes=64
    )
    partition_log = PartitionLog.open(tmp_path / TP.dir_name, config=config, clock=clock)
    for n in range(0, 160, 4):
        records = [Record(i, clock.now_ms(), b"k%d" % ((n + i) % KEYS), b"v") for i in range(4)]
        partition_log.append(build_batch(records, base_offset=0))
    yield partition_log
    partition_log.close()


def keys_below(log: PartitionLog, end: int) -> list[bytes]:
    return [
        record.key or b""
        for segment in log.segments
        for position, header in segment.batches()
        for record in iter_records(segment.read(position, header.size))
        if record.offset < end
    ]


def test_a_pass_runs_off_the_loop_and_swaps_on_it(
    log: PartitionLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    swapped_on: list[int] = []
    replace = PartitionLog.replace_segments

    def recording(self: PartitionLog, new: LogSegment, old: Sequence[LogSegment]) -> None:
        swapped_on.append(threading.get_ident())
        replace(self, new, old)

    monkeypatch.setattr(PartitionLog, "replace_segments", recording)

    async def clean() -> tuple[int, int | None]:
        service = CleanerService(clock=log.clock)
        service.start(backoff_ms=3_600_000, logs=dict, high_watermarks=dict)
        stats = await service.clean_filthiest({TP: log}, {TP: log.log_end_offset})
        await service.stop()
        return threading.get_ident(), None if stats is None else stats.end_offset

    loop_thread, end = run(clean)
    assert end is not None
    assert swapped_on and set(swapped_on) == {loop_thread}
    assert sorted(keys_below(log, end)) == sorted({b"k%d" % k for k in range(KEYS)})


def test_deleting_the_log_during_a_pass_aborts_it(log: PartitionLog, tmp_path: Path) -> None:
    async def clean() -> object:
        service = CleanerService(clock=log.clock)
        service.start(backoff_ms=3_600_000, logs=dict, high_watermarks=dict)
        pass_ = asyncio.ensure_future(service.clean_filthiest({TP: log}, {TP: log.log_end_offset}))
        await asyncio.sleep(0)  # the pass is chosen; its worker is reading
        service.forget(log)
        log.close()  # what LogManager.delete does next, on the event loop
        stats = await pass_
        await service.stop()
        return stats

    assert run(clean) is None
    assert not [path for path in log.directory.iterdir() if ".cleaned" in path.name]
    assert not (tmp_path / "cleaner-offset-checkpoint").exists()
