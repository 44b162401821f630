"""The coordinators' settings: ``__consumer_offsets`` and consumer groups, ``__transaction_state``
and transactions, and the expiry of idempotent producers."""

from __future__ import annotations

from typing import Final

from strom.config.setting import INT_MAX, Setting, at_least
from strom.config.shorthands import INT, LONG, SHORT

__all__ = ["COORDINATOR_SETTINGS"]

COORDINATOR_SETTINGS: Final = (
    Setting(
        "offsets.topic.num.partitions", INT, 50, "Partitions of __consumer_offsets.", at_least(1)
    ),
    Setting(
        "offsets.topic.replication.factor",
        SHORT,
        3,
        "Replication factor of __consumer_offsets (at most the brokers alive).",
        at_least(1),
    ),
    Setting(
        "offsets.topic.segment.bytes",
        INT,
        104857600,
        "Segment size of __consumer_offsets.",
        at_least(1),
    ),
    Setting(
        "offsets.retention.minutes",
        INT,
        10080,
        "Keep offsets of empty groups this long.",
        at_least(1),
    ),
    Setting(
        "offsets.retention.check.interval.ms",
        LONG,
        600000,
        "How often offset expiry runs.",
        at_least(1),
    ),
    Setting(
        "group.initial.rebalance.delay.ms",
        INT,
        3000,
        "Wait for more members before the first rebalance.",
        at_least(0),
    ),
    Setting("group.min.session.timeout.ms", INT, 6000, "Smallest session timeout.", at_least(0)),
    Setting("group.max.session.timeout.ms", INT, 1800000, "Largest session timeout.", at_least(0)),
    Setting("group.max.size", INT, INT_MAX, "Most members in one group.", at_least(1)),
    Setting(
        "offset.metadata.max.bytes",
        INT,
        4096,
        "Largest metadata string of a committed offset.",
        at_least(0),
    ),
    Setting(
        "transaction.max.timeout.ms",
        INT,
        900000,
        "Largest transaction timeout a producer may ask for.",
        at_least(1),
    ),
    Setting(
        "transaction.state.log.num.partitions",
        INT,
        50,
        "Partitions of __transaction_state.",
        at_least(1),
    ),
    Setting(
        "transactional.id.expiration.ms",
        INT,
        604800000,
        "Forget idle transactional ids after this long.",
        at_least(1),
    ),
    Setting(
        "transaction.state.log.replication.factor",
        SHORT,
        3,
        "Replication factor of __transaction_state (at most the brokers alive).",
        at_least(1),
    ),
    Setting(
        "transaction.state.log.min.isr",
        INT,
        2,
        "min.insync.replicas of __transaction_state (at most its replicas).",
        at_least(1),
    ),
    Setting(
        "transaction.state.log.segment.bytes",
        INT,
        104857600,
        "Segment size of __transaction_state.",
        at_least(1),
    ),
    Setting(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        INT,
        10000,
        "How often transactions older than their timeout are aborted.",
        at_least(1),
    ),
    Setting(
        "transaction.remove.expired.transaction.cleanup.interval.ms",
        INT,
        3600000,
        "How often expired transactional ids are removed.",
        at_least(1),
    ),
    Setting(
        "producer.id.expiration.ms",
        INT,
        86400000,
        "Forget idle idempotent producers after this long.",
        at_least(1),
    ),
    Setting(
        "producer.id.expiration.check.interval.ms",
        INT,
        600000,
        "How often idle idempotent producers are forgotten.",
        at_least(1),
    ),
)
