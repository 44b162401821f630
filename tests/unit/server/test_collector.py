"""The collector settings ``strom server`` applies once it serves, and imports with it paused."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from strom.server.collector import YOUNG_THRESHOLD, import_module, settle_after_start


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


@pytest.fixture
def module_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in ("collector_seen", "collector_broken"):
        sys.modules.pop(name, None)


def test_a_module_is_imported_with_the_collector_paused(module_dir: Path) -> None:
    (module_dir / "collector_seen.py").write_text("import gc\nENABLED = gc.isenabled()\n")
    assert gc.isenabled()
    assert import_module("collector_seen").ENABLED is False
    assert gc.isenabled()


def test_the_collector_runs_again_after_a_failed_import(module_dir: Path) -> None:
    (module_dir / "collector_broken.py").write_text("raise ValueError('broken')\n")
    with pytest.raises(ValueError, match="broken"):
        import_module("collector_broken")
    assert gc.isenabled()


def test_a_paused_collector_stays_paused() -> None:
    gc.disable()
    try:
        import_module("json")
        assert not gc.isenabled()
    finally:
        gc.enable()
