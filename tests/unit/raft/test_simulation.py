"""The quorum simulation over a fixed range of seeds (``simulate.py`` runs thousands)."""

from __future__ import annotations

import logging

import pytest
from raft_simulation import run_seed

SEEDS = range(200)


@pytest.fixture(autouse=True)
def _quiet() -> None:
    logging.getLogger("strom.raft").setLevel(logging.ERROR)


@pytest.mark.parametrize("seed", SEEDS)
def test_seed(seed: int) -> None:
    """1-5 voters and 0-5 observers by seed; faults, then healing and convergence."""
    run_seed(seed, voters=1 + seed % 5, observers=seed % 6, steps=1200)


DYNAMIC_SEEDS = range(100)


@pytest.mark.parametrize("seed", DYNAMIC_SEEDS)
def test_dynamic_seed(seed: int) -> None:
    """KIP-853: 1-3 first voters of 5 controllers, 0-2 observers; voters added and removed
    (the leader itself too) amid the faults, then healing and convergence."""
    sim = run_seed(seed, voters=1 + seed % 3, observers=seed % 3, steps=1200, dynamic=True)
    assert sim.admin_answers, "no voter change was asked"
