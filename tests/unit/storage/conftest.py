from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from strom.common.clock import ManualClock
from strom.storage.log_config import LogConfig
from strom.storage.partition_log import PartitionLog

OpenLog = Callable[..., PartitionLog]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(now_ms=1_700_000_000_000)


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path / "orders-0"


@pytest.fixture
def open_log(log_dir: Path, clock: ManualClock) -> Iterator[OpenLog]:
    """Open the test partition directory (again); every log opened is closed at the end."""
    opened: list[PartitionLog] = []

    def open_(
        config: LogConfig | None = None,
        *,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        had_clean_shutdown: bool = False,
    ) -> PartitionLog:
        log = PartitionLog.open(
            log_dir,
            config=config or LogConfig(),
            clock=clock,
            recovery_point=recovery_point,
            log_start_offset=log_start_offset,
            had_clean_shutdown=had_clean_shutdown,
        )
        opened.append(log)
        return log

    yield open_
    for log in opened:
        log.close_without_flush()
