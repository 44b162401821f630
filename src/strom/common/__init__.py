"""Vocabulary shared by every strom package: ids, topic-partitions, clocks, errors."""

from strom.common.clock import Clock, SystemClock
from strom.common.errors import ErrorCode, KafkaError
from strom.common.ids import (
    BrokerId,
    LeaderEpoch,
    Offset,
    ProducerEpoch,
    ProducerId,
    TopicPartition,
)
from strom.common.randomness import RandomSource

__all__ = [
    "BrokerId",
    "Clock",
    "ErrorCode",
    "KafkaError",
    "LeaderEpoch",
    "Offset",
    "ProducerEpoch",
    "ProducerId",
    "RandomSource",
    "SystemClock",
    "TopicPartition",
]
