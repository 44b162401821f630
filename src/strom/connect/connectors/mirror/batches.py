"""What a micro-batch of the mirror copies, from the query's offset log instead of a Spark job.

Spark writes each micro-batch's end offsets to ``<checkpoint>/offsets/<batch id>`` before it runs
the batch (a format it keeps readable across versions, as checkpoints must be): ``v1``, a line
of metadata, then one line per source, the ``strom`` source's offset JSON (``{topic:
{partition: offset}}``). The batch reads each partition from the previous batch's end to its
own. Where every offset in those ranges is a record (no transaction markers, compaction or
retention gaps), the first record is the start, the last is the end minus one and the count
their difference, so the offset syncs need no aggregation over the batch. The count of the rows
written checks that. Pure: text in, ranges out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

__all__ = ["Copied", "planned_ranges"]


@dataclass(frozen=True)
class Copied:
    """One source partition's records in a micro-batch: offsets ``first``..``last``,
    ``records`` of them (fewer than ``last - first + 1`` where the partition has gaps)."""

    topic: str
    partition: int
    first: int
    last: int
    records: int


def _offsets(entry: str) -> dict[tuple[str, int], int] | None:
    """The source's offsets in one offset log entry (None when it has none)."""
    lines = entry.splitlines()
    if len(lines) < 3 or lines[0] != "v1" or lines[2] == "-":
        return None
    parsed = json.loads(lines[2])
    return {(t, int(p)): int(o) for t, parts in parsed.items() for p, o in parts.items()}


def planned_ranges(previous: str | None, current: str) -> list[Copied] | None:
    """The ranges a batch reads if gap free (its offset log entry ``current`` and the one
    before it), partitions with nothing new left out; None when a range's start is not known
    (the first batch, or a partition new in this one)."""
    if previous is None:
        return None
    starts, ends = _offsets(previous), _offsets(current)
    if starts is None or ends is None or not set(ends) <= set(starts):
        return None
    return [
        Copied(topic, partition, starts[topic, partition], end - 1, end - starts[topic, partition])
        for (topic, partition), end in sorted(ends.items())
        if end > starts[topic, partition]
    ]
