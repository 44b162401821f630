"""Offsets as Spark's Kafka source writes them, offset specs, and the ranges a batch reads.

A streaming offset is Spark's JSON form ``{"topic": {"0": 42, "1": 7}}``: for each partition the
next offset to read. Offset specs (``startingOffsets`` & co.) say where to begin or end before
they are resolved against the broker: ``earliest``, ``latest``, per-partition offsets where -2
means earliest and -1 latest, or timestamps. Everything here is pure; the broker is asked in
``strom.spark.broker``.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from strom.common import TopicPartition

__all__ = [
    "EARLIEST",
    "LATEST",
    "OffsetRange",
    "OffsetSpec",
    "PartitionOffsets",
    "SpecKind",
    "from_json_dict",
    "parse_offsets_json",
    "parse_partitions_json",
    "parse_timestamps_json",
    "prorate",
    "split_ranges",
    "to_json_dict",
]

EARLIEST = -2
"""In a per-partition offsets JSON: start from the earliest offset of that partition."""
LATEST = -1
"""In a per-partition offsets JSON: start from the latest offset of that partition."""

PartitionOffsets = dict[TopicPartition, int]


class SpecKind(Enum):
    """How an offset spec names its offsets."""

    EARLIEST = "earliest"
    LATEST = "latest"
    OFFSETS = "offsets"  # per partition, -2/-1 allowed
    TIMESTAMP = "timestamp"  # one timestamp for every partition
    TIMESTAMPS = "timestamps"  # a timestamp per partition


@dataclass(frozen=True)
class OffsetSpec:
    """Where reading starts or ends, before it is resolved against the broker."""

    kind: SpecKind
    offsets: PartitionOffsets = field(default_factory=dict)
    timestamp: int = 0

    @classmethod
    def earliest(cls) -> OffsetSpec:
        return cls(SpecKind.EARLIEST)

    @classmethod
    def latest(cls) -> OffsetSpec:
        return cls(SpecKind.LATEST)


@dataclass(frozen=True)
class OffsetRange:
    """Offsets ``[start, end)`` of one partition: what one Spark task reads."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return max(0, self.end - self.start)


def _load_json(option: str, text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"option '{option}' is not valid JSON ({exc.msg}): {text!r}") from None


def _partition_map(option: str, text: str) -> dict[TopicPartition, int]:
    """``{"topic": {"0": n, ...}, ...}`` as a dict of integers per partition."""
    value = _load_json(option, text)
    shape = f'option \'{option}\' must look like {{"topicA":{{"0":23,"1":-1}}}}, got {text!r}'
    if not isinstance(value, dict):
        raise ValueError(shape)
    out: dict[TopicPartition, int] = {}
    for topic, partitions in value.items():
        if not isinstance(partitions, dict):
            raise ValueError(shape)
        for partition, number in partitions.items():
            if not (isinstance(partition, str) and partition.lstrip("-").isdigit()):
                raise ValueError(shape)
            if isinstance(number, bool) or not isinstance(number, int):
                raise ValueError(shape)
            out[TopicPartition(topic, int(partition))] = number
    return out


def parse_offsets_json(option: str, text: str) -> OffsetSpec:
    """``earliest``, ``latest`` or per-partition JSON, for ``startingOffsets``/``endingOffsets``."""
    word = text.strip().lower()
    if word == "earliest":
        return OffsetSpec.earliest()
    if word == "latest":
        return OffsetSpec.latest()
    offsets = _partition_map(option, text)
    for tp, offset in offsets.items():
        if offset < EARLIEST:
            raise ValueError(
                f"option '{option}': offset {offset} of {tp.topic}-{tp.partition} is invalid "
                f"(use a non-negative offset, -2 for earliest or -1 for latest)"
            )
    return OffsetSpec(SpecKind.OFFSETS, offsets=offsets)


def parse_timestamps_json(option: str, text: str) -> OffsetSpec:
    """The per-partition JSON of ``startingOffsetsByTimestamp``/``endingOffsetsByTimestamp``."""
    return OffsetSpec(SpecKind.TIMESTAMPS, offsets=_partition_map(option, text))


def parse_partitions_json(option: str, text: str) -> tuple[TopicPartition, ...]:
    """The ``assign`` option: ``{"topicA":[0,1],"topicB":[2,4]}``."""
    value = _load_json(option, text)
    shape = f'option \'{option}\' must look like {{"topicA":[0,1],"topicB":[2,4]}}, got {text!r}'
    if not isinstance(value, dict):
        raise ValueError(shape)
    out: list[TopicPartition] = []
    for topic, partitions in value.items():
        if not isinstance(partitions, list) or not all(
            isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in partitions
        ):
            raise ValueError(shape)
        out.extend(TopicPartition(topic, p) for p in partitions)
    return tuple(sorted(set(out)))


def to_json_dict(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """Spark's offset JSON, topics and partitions in order (Spark compares offsets as text)."""
    out: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        out.setdefault(tp.topic, {})[str(tp.partition)] = offsets[tp]
    return out


def from_json_dict(value: Mapping[str, Any]) -> PartitionOffsets:
    """The inverse of ``to_json_dict`` (a checkpointed streaming offset)."""
    return {
        TopicPartition(topic, int(partition)): int(offset)
        for topic, partitions in value.items()
        for partition, offset in partitions.items()
    }


def split_ranges(ranges: Iterable[OffsetRange], min_partitions: int | None) -> list[OffsetRange]:
    """One range per partition, cut into more pieces when ``minPartitions`` asks for them.

    As Spark's Kafka source does: with fewer non-empty ranges than ``min_partitions``, each range
    is cut into pieces in proportion to its share of all offsets, at least one piece each.
    """
    kept = [r for r in ranges if r.size > 0]
    if not min_partitions or len(kept) >= min_partitions:
        return kept
    total = sum(r.size for r in kept)
    out: list[OffsetRange] = []
    for r in kept:
        pieces = max(1, round(r.size / total * min_partitions))
        out.extend(_cut(r, pieces))
    return out


def _cut(r: OffsetRange, pieces: int) -> Sequence[OffsetRange]:
    bounds = [r.start + (r.size * i) // pieces for i in range(pieces + 1)]
    return [
        OffsetRange(r.topic, r.partition, lo, hi)
        for lo, hi in itertools.pairwise(bounds)
        if hi > lo
    ]


def prorate(
    start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int], budget: int
) -> PartitionOffsets:
    """End offsets that admit at most ``budget`` offsets, shared in proportion to each lag.

    Rounding as Spark's rate limit: a share below one offset is rounded up so a small
    partition still moves, larger shares are rounded down.
    """
    lags = {tp: max(0, latest[tp] - start[tp]) for tp in latest}
    total = sum(lags.values())
    if total <= budget:
        return dict(latest)
    out: PartitionOffsets = {}
    for tp, lag in lags.items():
        share = budget * (lag / total)
        step = math.ceil(share) if share < 1 else math.floor(share)
        out[tp] = min(start[tp] + step, latest[tp])
    return out
