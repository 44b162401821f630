"""``--throttle``: the replicas a reassignment's throttle names, as Kafka's tool names them."""

from __future__ import annotations

from strom.balancer.throttles import throttled_replicas
from strom.common import TopicPartition


def test_leaders_are_the_current_replicas_and_followers_the_added_ones() -> None:
    current: dict[TopicPartition, tuple[int, ...]] = {
        TopicPartition("orders", 0): (1, 2),
        TopicPartition("orders", 1): (2, 3),
        TopicPartition("users", 0): (1, 2),
    }
    plan: dict[TopicPartition, tuple[int, ...]] = {
        TopicPartition("orders", 0): (3, 2),
        TopicPartition("orders", 1): (2, 3),  # not moving: not throttled
        TopicPartition("users", 0): (2, 1),  # reordered only: no replica added
    }
    assert throttled_replicas(current, plan) == {
        "orders": ("0:1,0:2", "0:3"),
        "users": ("0:1,0:2", ""),
    }
