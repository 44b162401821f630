"""Typed identifiers: plain ints and strings that the type checker keeps apart."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NewType

Offset = NewType("Offset", int)
BrokerId = NewType("BrokerId", int)
LeaderEpoch = NewType("LeaderEpoch", int)
ProducerId = NewType("ProducerId", int)
ProducerEpoch = NewType("ProducerEpoch", int)


@dataclass(frozen=True, slots=True, order=True)
class TopicPartition:
    """One partition of one topic; its directory on disk is ``<topic>-<partition>``."""

    topic: str
    partition: int

    @property
    def dir_name(self) -> str:
        return f"{self.topic}-{self.partition}"

    @classmethod
    def from_dir_name(cls, name: str) -> TopicPartition:
        """Parse ``<topic>-<partition>``; topics may themselves contain dashes."""
        topic, sep, partition = name.rpartition("-")
        if not sep or not topic or not partition.isdigit():
            raise ValueError(f"not a partition directory name: {name!r}")
        return cls(topic, int(partition))

    def __str__(self) -> str:
        return self.dir_name
