"""Elections on a closed leader connection, in the simulation (virtual time): a voter whose
leader's process died stands for election well before its fetch timeout, and a voter whose
connection to a healthy leader flaps never disrupts it (pre-vote, KIP-996)."""

from __future__ import annotations

import logging

import pytest
from raft_simulation import CONFIG, Node, Simulation

from strom.raft import Role

SEEDS = range(20)


@pytest.fixture(autouse=True)
def _quiet() -> None:
    logging.getLogger("strom.raft").setLevel(logging.ERROR)


def _settled(sim: Simulation) -> Node:
    """Run without faults until one leader has every other voter following it."""
    for _ in range(5000):
        sim.step(faults=False)
        leader = sim._leader()
        if leader is not None and all(
            node.client.role is Role.FOLLOWER and node.client.leader_and_epoch.leader_id
            for node in sim.nodes.values()
            if node is not leader
        ):
            return leader
    raise AssertionError(f"seed {sim.seed}: no settled leader")


@pytest.mark.parametrize("seed", SEEDS)
def test_a_killed_leader_is_replaced_before_the_fetch_timeout(seed: int) -> None:
    sim = Simulation(seed, voters=3)
    leader = _settled(sim)
    epoch = leader.client.epoch
    killed_at = sim.clock.monotonic_ms()
    leader.kill(lose_unflushed=False)
    while (successor := sim._leader()) is None or successor.client.epoch == epoch:
        sim.step(faults=False)
        assert sim.clock.monotonic_ms() - killed_at < 10 * CONFIG.fetch_timeout_ms
    # Waiting for the fetch timeout would take at least the fetch timeout less a long poll.
    assert sim.clock.monotonic_ms() - killed_at < CONFIG.fetch_timeout_ms // 2
    sim.converge()


@pytest.mark.parametrize("seed", SEEDS)
def test_a_voter_whose_leader_connection_flaps_does_not_disrupt_the_leader(seed: int) -> None:
    sim = Simulation(seed, voters=3)
    leader = _settled(sim)
    epoch = leader.client.epoch
    flapping = next(node for node in sim.nodes.values() if node is not leader)
    asked = 0
    until = sim.clock.monotonic_ms() + 20 * CONFIG.fetch_timeout_ms
    while sim.clock.monotonic_ms() < until:
        if sim.rng.random() < 0.05:
            flapping.client.connection_closed(leader.node_id)
            flapping.next_poll = sim.clock.monotonic_ms()
            asked += flapping.client.prospect is not None
        sim.step(faults=False)
        assert sim._leader() is leader
        assert all(node.client.epoch == epoch for node in sim.nodes.values())
    assert asked
    sim.converge()
