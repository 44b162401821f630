"""Run the quorum simulation over many seeds, or replay one.

.venv/bin/python tests/unit/raft/simulate.py --seeds 5000
.venv/bin/python tests/unit/raft/simulate.py --seed 1234 --voters 5 --observers 2
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(1, str(Path(__file__).parents[2]))  # tests/: seed_runs

from raft_simulation import InvariantViolated, run_seed
from seed_runs import run_seeds


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

    def run(seed: int) -> None:
        voters = args.voters if args.voters is not None else 1 + seed % 5
        observers = args.observers if args.observers is not None else seed % 6
        run_seed(seed, voters=voters, observers=observers, steps=args.steps, dynamic=args.dynamic)

    return run_seeds(seeds, run, InvariantViolated)


if __name__ == "__main__":
    sys.exit(main())
