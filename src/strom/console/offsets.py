"""Partitions' earliest and latest offsets, asked of their leaders directly: for each leader one
ListOffsets request with all of its partitions for the earliest offsets and one for the latest,
all sent at once. librdkafka's ``list_offsets`` asks for the topics' Metadata again on every
call and makes a Python future per partition, which with 10,000 partitions took seconds; the
leaders are known here from the Metadata answer the page already has. Kafka refuses a partition
named twice in one request (INVALID_REQUEST), hence two requests a leader, not one."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any, Final, cast

from kio.schema.errors import ErrorCode
from kio.schema.list_offsets.v5.request import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i32, i64

from strom.client.async_client import NodeClients
from strom.client.security import ClientSecurity

__all__ = ["EARLIEST", "LATEST", "Leaders", "list_offsets_requests", "offsets_of", "watermarks"]

EARLIEST: Final = -2
LATEST: Final = -1
CONSUMER: Final = BrokerId(-1)
READ_UNCOMMITTED: Final = i8(0)
REQUEST_TIMEOUT_S: Final = 30.0

Leaders = Mapping[int, Iterable[tuple[str, int]]]
"""Each leader's broker id and the (topic, partition)s it leads."""


def list_offsets_requests(partitions: Iterable[tuple[str, int]], timestamp: int) -> Any:
    """One ListOffsets request (v5, as a consumer, read uncommitted) for ``partitions`` at
    ``timestamp`` (``EARLIEST``, ``LATEST`` or a time in ms). v5 is the last one without
    tagged fields, which kio writes at a cost per partition; the partition numbers, ints from a
    Metadata answer, are not checked again as kio's ``i32`` would (a tenth of the time)."""
    by_topic: dict[str, list[ListOffsetsPartition]] = {}
    at = i64(timestamp)
    for topic, partition in partitions:
        entry = ListOffsetsPartition(partition_index=cast(i32, partition), timestamp=at)
        by_topic.setdefault(topic, []).append(entry)
    return ListOffsetsRequest(
        replica_id=CONSUMER,
        isolation_level=READ_UNCOMMITTED,
        topics=tuple(
            ListOffsetsTopic(name=TopicName(name), partitions=tuple(entries))
            for name, entries in by_topic.items()
        ),
    )


def offsets_of(response: Any) -> dict[tuple[str, int], int]:
    """The offsets a ListOffsets answer found (partitions with an error left out), kio's ints
    and strings as they are (``int()`` of each cost more than all else)."""
    none = ErrorCode.none
    return {
        (topic.name, p.partition_index): p.offset
        for topic in response.topics
        for p in topic.partitions
        if p.error_code is none
    }


async def watermarks(
    leaders: Leaders,
    addresses: Mapping[int, tuple[str, int]],
    security: ClientSecurity,
    *,
    timestamps: tuple[int, ...] = (EARLIEST, LATEST),
) -> list[dict[tuple[str, int], int]]:
    """For each of ``timestamps``, the offsets of the leaders' partitions; a leader that cannot
    be reached, or a partition it no longer leads, is left out."""
    clients = NodeClients(
        addresses.get, client_id="strom-console", request_timeout=REQUEST_TIMEOUT_S,
        security=security,
    )  # fmt: skip

    async def ask(at: int, leader: int, partitions: Iterable[tuple[str, int]]) -> dict[Any, int]:
        try:
            request = list_offsets_requests(partitions, at)
            return offsets_of(await clients.request(leader, request))
        except OSError:  # not reachable (RequestFailed), or its login refused
            return {}

    asked = [(at, leader, list(partitions)) for leader, partitions in leaders.items()
             for at in timestamps]  # fmt: skip
    try:
        answers = await asyncio.gather(*(ask(*one) for one in asked))
    finally:
        await clients.close()
    found: dict[int, dict[tuple[str, int], int]] = {at: {} for at in timestamps}
    for (at, _, _), answer in zip(asked, answers, strict=True):
        found[at].update(answer)
    return [found[at] for at in timestamps]
