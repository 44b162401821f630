"""kafka-topics.sh's partition reports, decided on a partition's state."""

from __future__ import annotations

import pytest

from strom.cli.partition_reports import PartitionState, Report

LIVE = {1, 2}


@pytest.mark.parametrize(
    ("state", "reported"),
    [
        (PartitionState(1, [1, 2, 3], [1, 2, 3]), set()),
        (
            PartitionState(1, [1, 2, 3], [1, 2]),
            {Report.UNDER_REPLICATED, Report.AT_MIN_ISR},
        ),
        (
            PartitionState(1, [1, 2, 3], [1]),
            {Report.UNDER_REPLICATED, Report.UNDER_MIN_ISR},
        ),
        (  # no leader: unavailable and under min ISR, not under-replicated (Kafka's rule)
            PartitionState(None, [3], [3]),
            {Report.UNDER_MIN_ISR, Report.UNAVAILABLE},
        ),
        (PartitionState(3, [3, 1], [3, 1]), {Report.UNAVAILABLE, Report.AT_MIN_ISR}),
    ],
)
def test_reports(state: PartitionState, reported: set[Report]) -> None:
    found = {r for r in Report if state.reported(r, live_brokers=LIVE, min_isr=2)}
    assert found == reported


def test_offline_replicas_are_those_on_brokers_not_alive() -> None:
    assert PartitionState(1, [1, 2, 3], [1, 2]).offline(LIVE) == [3]
