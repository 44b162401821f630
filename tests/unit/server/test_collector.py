"""The collector settings ``strom server`` applies once it serves."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from strom.server.collector import YOUNG_THRESHOLD, settle_after_start


@pytest.fixture
def restored_collector() -> Iterator[None]:
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


@pytest.mark.usefixtures("restored_collector")
def test_start_up_objects_are_frozen_and_young_collections_rarer() -> None:
    _, middle, old = gc.get_threshold()
    survivor = [object()]
    settle_after_start()
    assert gc.get_freeze_count() > 0
    assert not any(tracked is survivor for tracked in gc.get_objects())  # frozen: walked by none
    assert gc.get_threshold() == (YOUNG_THRESHOLD, middle, old)
