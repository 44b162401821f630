"""Run the quorum simulation over many seeds, or replay one.

.venv/bin/python tests/unit/raft/simulate.py --seeds 5000
.venv/bin/python tests/unit/raft/simulate.py --seed 1234 --voters 5 --observers 2
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from raft_simulation import InvariantViolated, run_seed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, help="replay this one seed")
    parser.add_argument("--seeds", type=int, default=1000, help="how many seeds, from --first")
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--voters", type=int, help="voters (default: 1 to 5, by seed)")
    parser.add_argument("--observers", type=int, help="observers (default: 0 to 5, by seed)")
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--dynamic", action="store_true", help="voters added and removed")
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # the nodes' own log lines; failures print themselves
    seeds = [args.seed] if args.seed is not None else range(args.first, args.first + args.seeds)
    failures = 0
    started = time.monotonic()
    for count, seed in enumerate(seeds, start=1):
        voters = args.voters if args.voters is not None else 1 + seed % 5
        observers = args.observers if args.observers is not None else seed % 6
        try:
            run_seed(
                seed, voters=voters, observers=observers, steps=args.steps, dynamic=args.dynamic
            )
        except InvariantViolated as error:
            failures += 1
            print(f"FAIL {error}", flush=True)
        if count % 100 == 0:
            print(
                f"{count} seed(s), {failures} failure(s), {time.monotonic() - started:.0f} s",
                flush=True,
            )
    print(f"{len(seeds)} seed(s), {failures} failure(s) in {time.monotonic() - started:.1f} s")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
