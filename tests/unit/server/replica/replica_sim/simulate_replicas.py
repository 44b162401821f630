"""Run the replica simulation over many seeds, or replay one.

.venv/bin/python tests/unit/server/replica/replica_sim/simulate_replicas.py --seeds 5000
.venv/bin/python tests/unit/server/replica/replica_sim/simulate_replicas.py --seed 1234 --steps 2000
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(1, str(Path(__file__).parents[4]))  # tests/: seed_runs

from replica_simulation import InvariantViolated, run_seed
from seed_runs import run_seeds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, help="replay this one seed")
    parser.add_argument("--seeds", type=int, default=1000, help="how many seeds, from --first")
    parser.add_argument("--first", type=int, default=0)
    parser.add_argument("--steps", type=int, default=400, help="client and fault steps per seed")
    args = parser.parse_args()
    logging.disable(logging.WARNING)  # the brokers' own log lines; failures print themselves
    seeds = [args.seed] if args.seed is not None else range(args.first, args.first + args.seeds)
    return run_seeds(seeds, lambda seed: run_seed(seed, steps=args.steps), InvariantViolated)


if __name__ == "__main__":
    sys.exit(main())
