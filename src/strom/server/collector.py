"""The garbage collector's settings for a long-running ``strom server`` process.

Python's cycle collector pauses the event loop, and every request waits behind a pause. With
the interpreter's defaults a broker serving 5,000 small produce requests a second ran ~15
young (generation-0) collections a second, a generation-1 one every ~0.7 s (up to 2 ms) and
now and then a full one of 13-14 ms (more on a loaded machine): the full collection walks
every object the broker holds, and ~65,000 of them are modules, classes, kio schemas and
configuration made at start-up that live as long as the process.

``settle_after_start`` runs once the broker is serving:

- ``gc.collect()`` then ``gc.freeze()``: the start-up objects move to the permanent
  generation, which no later collection walks (Python's documented use of ``freeze``; the
  only cost is that garbage cycles among those objects, if any ever form, are not freed);
- the young generation's threshold goes from 700 to ``YOUNG_THRESHOLD`` allocations: a broker
  frees nearly all its per-request objects by reference counting (no cyclic garbage was found
  under load), so the young collections found nothing to free; fewer of them, each still well
  under a millisecond, cost less in total and stall the loop less often. The older
  generations keep their defaults.

The in-process test broker (``strom.testing``) leaves the test process's collector alone.

``import_module`` imports with the collector paused: importing the server stack makes some
700 modules' classes, functions and kio schemas, all of which live as long as the process,
and the collections that allocation sets off (young ones every 700 objects, and a full one)
walk them and free nothing. Pausing it for the import of ``strom server`` or of the test
broker cut their start-up CPU by ~7% (docs/benchmarks.md, "Test broker start-up").
"""

from __future__ import annotations

import gc
import importlib
from types import ModuleType
from typing import Final

__all__ = ["YOUNG_THRESHOLD", "import_module", "settle_after_start"]

YOUNG_THRESHOLD: Final = 5000
"""Allocations (net of deallocations) of tracked objects between two young collections."""


def settle_after_start() -> None:
    """Freeze the start-up objects and make young collections rarer (see the module doc)."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, old)


def import_module(name: str, package: str | None = None) -> ModuleType:
    """``importlib.import_module`` with the cycle collector paused (see the module doc)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return importlib.import_module(name, package)
    finally:
        if enabled:
            gc.enable()
