"""Replication's settings: leader balance, the ISR, the followers' fetches, replication throttles,
and how long the coordinators' writes wait for the in-sync replicas."""

from __future__ import annotations

from typing import Final

from strom.config.setting import LONG_MAX, Setting, at_least
from strom.config.shorthands import BOOLEAN, INT, LONG, ms

__all__ = ["BALANCER_ALIASES", "REPLICATION_SETTINGS"]

BALANCER_ALIASES: Final = {
    "confluent.balancer.enable": "strom.balancer.enable",
    "confluent.balancer.throttle.bytes.per.second": "strom.balancer.throttle.bytes.per.second",
    "confluent.balancer.heal.broker.failure.threshold.ms": (
        "strom.balancer.heal.broker.failure.threshold.ms"
    ),
}
"""Confluent's Self-Balancing Clusters names accepted for strom's same settings."""

REPLICATION_SETTINGS: Final = (
    Setting(
        "auto.leader.rebalance.enable",
        BOOLEAN,
        True,
        "The active controller gives partitions back to their preferred replicas.",
        read_only=True,
    ),
    Setting(
        "leader.imbalance.check.interval.seconds",
        LONG,
        300,
        "How often the controller looks for partitions not led by their preferred replica.",
        at_least(1),
        read_only=True,
    ),
    Setting(
        "strom.balancer.enable",
        BOOLEAN,
        False,
        "The active controller moves replicas and leaders to keep their counts per broker even "
        "(Confluent's confluent.balancer.enable).",
        read_only=True,
    ),
    Setting(
        "strom.balancer.check.interval.ms",
        LONG,
        30000,
        "How often the self-balancing controller looks for an uneven cluster (a broker that "
        "joins is looked at once).",
        at_least(1),
        read_only=True,
    ),
    Setting(
        "strom.balancer.throttle.bytes.per.second",
        LONG,
        10 * 1024 * 1024,
        "Replication throttle of the self-balancing controller's moves, in bytes/s; -1: none "
        "(Confluent's confluent.balancer.throttle.bytes.per.second).",
        at_least(-1),
        read_only=True,
    ),
    Setting(
        "strom.balancer.max.concurrent.moves",
        INT,
        5,
        "Partitions the self-balancing controller moves at a time.",
        at_least(1),
        read_only=True,
    ),
    Setting(
        "strom.balancer.heal.broker.failure.threshold.ms",
        LONG,
        3600000,
        "How long a broker may be fenced or gone before the self-balancing controller moves "
        "its replicas to live brokers; -1: never (Confluent's "
        "confluent.balancer.heal.broker.failure.threshold.ms).",
        at_least(-1),
        read_only=True,
    ),
    Setting(
        "strom.balancer.metrics.reporter.interval.ms",
        LONG,
        60000,
        "How often a broker samples its partitions' sizes and byte rates for the balancer and "
        "reports them to the controller (Cruise Control's "
        "cruise.control.metrics.reporter.interval.ms).",
        at_least(1),
        read_only=True,
    ),
    Setting(
        "replica.lag.time.max.ms",
        LONG,
        30000,
        "A follower not caught up for this long leaves the ISR.",
        at_least(1),
        read_only=True,
    ),
    ms("replica.fetch.wait.max.ms", 500, "How long a follower's fetch waits for data."),
    Setting(
        "leader.replication.throttled.rate",
        LONG,
        LONG_MAX,
        "Bytes per second this broker sends to throttled followers that are out of sync "
        "(leader.replication.throttled.replicas).",
        at_least(0),
    ),
    Setting(
        "follower.replication.throttled.rate",
        LONG,
        LONG_MAX,
        "Bytes per second this broker fetches for throttled replicas that are out of sync "
        "(follower.replication.throttled.replicas).",
        at_least(0),
    ),
    Setting(
        "replication.quota.window.num",
        INT,
        11,
        "Windows the replication throttles measure their rate over.",
        at_least(1),
        read_only=True,
    ),
    Setting(
        "replication.quota.window.size.seconds",
        INT,
        1,
        "Length of each window of the replication throttles.",
        at_least(1),
        read_only=True,
    ),
    Setting(
        "unclean.leader.election.enable",
        BOOLEAN,
        False,
        "Let a replica outside the ISR and the eligible leaders lead a partition that has no "
        "other (it may lose committed records).",
    ),
    Setting(
        "max.request.partition.size.limit",
        INT,
        2000,
        "The most partitions one DescribeTopicPartitions answer holds.",
        at_least(1),
        read_only=True,
    ),
    Setting("replica.fetch.min.bytes", INT, 1, "Bytes a follower's fetch waits for.", at_least(1)),
    Setting(
        "replica.fetch.max.bytes",
        INT,
        1048576,
        "Bytes a follower fetches per partition (a larger first batch comes whole).",
        at_least(0),
        read_only=True,
    ),
    Setting(
        "replica.fetch.response.max.bytes",
        INT,
        10485760,
        "Bytes a follower's fetch answer may hold.",
        at_least(0),
        read_only=True,
    ),
    ms("replica.fetch.backoff.ms", 1000, "A follower's pause after a failed fetch."),
    ms("replica.socket.timeout.ms", 30000, "A follower's fetch request timeout."),
    Setting(
        "offsets.commit.timeout.ms",
        INT,
        5000,
        "How long a group coordinator's write waits for the in-sync replicas.",
        at_least(1),
        read_only=True,
    ),
    Setting(
        "request.timeout.ms",
        INT,
        30000,
        "How long a transaction coordinator's write waits for the in-sync replicas.",
        at_least(0),
        read_only=True,
    ),
    Setting(
        "replica.high.watermark.checkpoint.interval.ms",
        LONG,
        5000,
        "How often high watermarks are written to replication-offset-checkpoint.",
        at_least(0),
        read_only=True,
    ),
)
