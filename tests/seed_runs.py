"""The loop of the seeded simulations' command lines (``tests/unit/raft/simulate.py``,
``tests/unit/server/replica/replica_sim/simulate_replicas.py``): run each seed, print each failure
and
the progress every hundred seeds, and say how many failed."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence


def run_seeds(
    seeds: Sequence[int], run: Callable[[int], object], violation: type[Exception]
) -> int:
    """``run(seed)`` for each seed; an exit status: 1 when any raised ``violation``."""
    failures = 0
    started = time.monotonic()
    for count, seed in enumerate(seeds, start=1):
        try:
            run(seed)
        except violation as error:
            failures += 1
            print(f"FAIL {error}", flush=True)
        if count % 100 == 0:
            print(
                f"{count} seed(s), {failures} failure(s), {time.monotonic() - started:.0f} s",
                flush=True,
            )
    print(f"{len(seeds)} seed(s), {failures} failure(s) in {time.monotonic() - started:.1f} s")
    return 1 if failures else 0
