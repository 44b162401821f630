"""The replica simulation over a fixed range of seeds (``simulate_replicas.py`` runs thousands)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from replica_simulation import run_seed

SEEDS = range(300)
STEPS = 150


@pytest.fixture(autouse=True)
def _quiet() -> Iterator[None]:
    logging.disable(logging.WARNING)
    yield
    logging.disable(logging.NOTSET)


@pytest.mark.parametrize("seed", SEEDS)
def test_seed(seed: int) -> None:
    """Three brokers (the real replica manager, fetchers, AlterPartition manager and group
    and transaction coordinator runtimes), acks=all writes, offset commits and transactions,
    ISR and leader changes under message faults, crashes (some losing an unflushed tail),
    restarts and a cut-off broker; the invariants hold (committed offsets never go back,
    transactions atomic among them), and at the end the cluster takes writes again, every
    transaction is decided everywhere and a fenced follower holds nothing back."""
    run_seed(seed, steps=STEPS)
