"""Run the replica simulation over many seeds, or replay one.

.venv/bin/python tests/unit/server/replica_sim/simulate_replicas.py --seeds 5000
.venv/bin/python tests/unit/server/replica_sim/simulate_replicas.py --seed 1234 --steps 2000
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from replica_simulation import InvariantViolated, run_seed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, help="replay this one seed")
    parser.add_argument("--seeds", type=int, default=1000, help="how many seeds, from --first")
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--steps", type=int, default=400, help="client and fault steps per seed")
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # the brokers' own log lines; failures print themselves
    seeds = [args.seed] if args.seed is not None else range(args.first, args.first + args.seeds)
    failures = 0
    started = time.monotonic()
    for count, seed in enumerate(seeds, start=1):
        try:
            run_seed(seed, steps=args.steps)
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
