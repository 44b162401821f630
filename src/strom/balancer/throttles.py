"""Which replicas a reassignment throttles, as ``kafka-reassign-partitions.sh --throttle`` picks
them: ``leader.replication.throttled.replicas`` names a moving partition's current replicas (any
of them may be the leader the new replicas copy from), ``follower.replication.throttled.replicas``
the replicas being added. Shared by ``strom partitions reassign``, ``strom balance`` and the
self-balancing controller."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from strom.common import TopicPartition

__all__ = ["throttled_replicas"]


def throttled_replicas(
    current: Mapping[TopicPartition, Sequence[int]], plan: Mapping[TopicPartition, Sequence[int]]
) -> dict[str, tuple[str, str]]:
    """Per topic with a moving partition: its leader and follower throttled replica lists."""
    leaders: dict[str, list[str]] = {}
    followers: dict[str, list[str]] = {}
    for tp, target in sorted(plan.items()):
        now = current.get(tp, ())
        if tuple(target) == tuple(now):
            continue
        leaders.setdefault(tp.topic, []).extend(f"{tp.partition}:{b}" for b in now)
        added = [f"{tp.partition}:{b}" for b in target if b not in now]
        followers.setdefault(tp.topic, []).extend(added)
    return {
        topic: (",".join(leaders[topic]), ",".join(followers.get(topic, []))) for topic in leaders
    }
