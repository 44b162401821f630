from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strom.controller import PlacementError, UsableBroker, place_replicas


def place(
    brokers: list[UsableBroker], partitions: int, rf: int, seed: int = 0
) -> list[tuple[int, ...]]:
    return place_replicas(
        brokers,
        num_partitions=partitions,
        replication_factor=rf,
        random=random.Random(seed),
    )


def test_one_broker_holds_everything() -> None:
    assert place([UsableBroker(1)], 3, 1) == [(1,), (1,), (1,)]


@pytest.mark.parametrize("seed", range(5))
def test_leaders_and_replicas_spread_evenly_over_brokers(seed: int) -> None:
    brokers = [UsableBroker(i) for i in range(5)]
    placements = place(brokers, 10, 3, seed)
    assert all(len(set(replicas)) == 3 for replicas in placements)
    leaders = Counter(replicas[0] for replicas in placements)
    assert sorted(leaders.values()) == [2, 2, 2, 2, 2]
    replicas = Counter(b for r in placements for b in r)
    assert sorted(replicas.values()) == [6, 6, 6, 6, 6]


@pytest.mark.parametrize("seed", range(5))
def test_replicas_spread_over_racks_first(seed: int) -> None:
    brokers = [UsableBroker(i, rack=f"rack-{i % 3}") for i in range(9)]
    for replicas in place(brokers, 12, 3, seed):
        assert {b % 3 for b in replicas} == {0, 1, 2}


def test_fenced_brokers_never_lead_and_are_used_only_when_needed() -> None:
    brokers = [UsableBroker(1), UsableBroker(2), UsableBroker(3, fenced=True)]
    for replicas in place(brokers, 6, 2):
        assert 3 not in replicas
    for replicas in place(brokers, 6, 3):
        assert replicas[0] != 3
        assert set(replicas) == {1, 2, 3}


@pytest.mark.parametrize(
    ("brokers", "rf", "message"),
    [
        ([], 1, "no brokers are registered"),
        ([UsableBroker(1, fenced=True)], 1, "all brokers are fenced"),
        ([UsableBroker(1), UsableBroker(2)], 3, "replication factor 3 is more than the 2"),
        ([UsableBroker(1)], 0, "replication factor must be positive"),
    ],
)
def test_impossible_placements(brokers: list[UsableBroker], rf: int, message: str) -> None:
    with pytest.raises(PlacementError, match=message):
        place(brokers, 1, rf)


@st.composite
def clusters(draw: st.DrawFn) -> tuple[list[UsableBroker], int]:
    ids = draw(st.lists(st.integers(0, 50), min_size=1, max_size=12, unique=True))
    brokers = [
        UsableBroker(
            i,
            rack=draw(st.sampled_from([None, "a", "b", "c"])),
            fenced=draw(st.booleans()),
        )
        for i in ids
    ]
    if all(b.fenced for b in brokers):
        brokers[0] = UsableBroker(brokers[0].id, rack=brokers[0].rack)
    rf = draw(st.integers(1, len(brokers)))
    return brokers, rf


@given(clusters(), st.integers(1, 30), st.integers(0, 2**32))
def test_every_placement_is_valid(
    cluster: tuple[list[UsableBroker], int], partitions: int, seed: int
) -> None:
    brokers, rf = cluster
    fenced = {b.id for b in brokers if b.fenced}
    placements = place(brokers, partitions, rf, seed)
    assert len(placements) == partitions
    for replicas in placements:
        assert len(replicas) == rf
        assert len(set(replicas)) == rf
        assert set(replicas) <= {b.id for b in brokers}
        assert replicas[0] not in fenced
