"""``strom broker decommission``'s plan: each replica on the broker goes to the least loaded
broker that is not yet a replica of its partition; impossible plans are refused."""

from __future__ import annotations

import pytest

from strom.cli.broker import plan_decommission
from strom.cli.client_common import CliError
from strom.common import TopicPartition


def tp(partition: int) -> TopicPartition:
    return TopicPartition("orders", partition)


def test_each_replica_moves_to_the_least_loaded_other_broker() -> None:
    current: dict[TopicPartition, tuple[int, ...]] = {
        tp(0): (3, 1),
        tp(1): (1, 3),
        tp(2): (1, 2),
        tp(3): (2, 3),
    }
    plan = plan_decommission(current, [1, 2, 3, 4], 3)
    # Loads without broker 3: 1 holds three replicas, 2 two, 4 none (then one, two).
    assert plan == {tp(0): (4, 1), tp(1): (1, 4), tp(3): (2, 4)}


def test_a_partition_on_every_other_broker_cannot_move() -> None:
    with pytest.raises(CliError, match="only 2 other brokers: add a broker first"):
        plan_decommission({tp(0): (1, 2, 3)}, [1, 2, 3], 3)
