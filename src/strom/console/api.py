"""The console's own JSON views (``/api/console/...``), gathered with the proxy's clients of the
HTTP user's login: the cluster's health, topics, a topic's partitions with offsets and its
settings, records by partition and offset, consumer groups with their lag, and a group's offset
reset (a dry run first). The page produces records and changes settings through the proxy's v3
API itself."""

from __future__ import annotations

import asyncio
import base64
import time
from collections.abc import Iterable, Mapping
from typing import Any, Final

from confluent_kafka import Consumer as KafkaConsumer
from confluent_kafka import (
    ConsumerGroupTopicPartitions,
    KafkaException,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import ConfigResource, ResourceType  # type: ignore[attr-defined]
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from strom.client.security import ClientSecurity, librdkafka_security
from strom.console.offsets import EARLIEST, LATEST, watermarks
from strom.console.resets import ResetTarget, check_inactive, new_offset, parse_target
from strom.console.snapshots import Snapshots
from strom.console.views import BrokerView, PartitionView, cluster_health, topic_row
from strom.rest.context import ProxyContext
from strom.rest.errors import RestError, from_kafka
from strom.rest.gateway import Login, blocking, result
from strom.web.http import json_response

__all__ = ["console_api"]

MAX_RECORDS: Final = 500
INTERNAL_TOPICS: Final = frozenset({"__consumer_offsets", "__transaction_state",
                                    "__share_group_state"})  # fmt: skip
"""Kafka's internal topics (``Topic.INTERNAL_TOPICS``): the Metadata answer's flag, which
confluent-kafka's ``list_topics`` does not keep."""
BROWSE_WAIT_S: Final = 2.0


def _partitions(described: Any, min_isr: Mapping[str, int] | None = None) -> list[PartitionView]:
    return [
        PartitionView(
            described.name,
            p.id,
            None if p.leader is None else p.leader.id,
            tuple(n.id for n in p.replicas),
            tuple(n.id for n in p.isr),
            (min_isr or {}).get(described.name, 1),
        )
        for p in described.partitions
    ]


def _listed(metadata: Any, min_isr: Mapping[str, int]) -> dict[str, list[PartitionView]]:
    """Each topic's partitions from a Metadata answer (``list_topics``), which has all the
    topics page needs: no DescribeTopicPartitions of every partition."""
    return {
        name: [
            PartitionView(
                name, p.id, p.leader, tuple(p.replicas), tuple(p.isrs), min_isr.get(name, 1)
            )
            for _, p in sorted(topic.partitions.items())
        ]
        for name, topic in sorted(metadata.topics.items())
        if topic.error is None
    }


def _led(metadata: Any, keys: Iterable[tuple[str, int]]) -> list[PartitionView]:
    """The partitions ``keys`` names that the Metadata answer has, with their leaders only (a
    group's partitions: each group's lag from the one answer of the second)."""
    found = []
    for topic, partition in keys:
        described = metadata.topics.get(topic)
        where = None if described is None else described.partitions.get(partition)
        if where is not None:
            found.append(PartitionView(topic, partition, where.leader, (), ()))
    return found


def _headers(message: Any) -> list[tuple[str, bytes | None]]:
    return list(message.headers() or ())


def _text(data: str | bytes | None) -> str | None:
    """A key or value as the page shows it: its text, or base64 when it is not UTF-8."""
    if data is None or isinstance(data, str):
        return data
    try:
        return data.decode()
    except UnicodeDecodeError:
        return "base64:" + base64.b64encode(data).decode()


def _browse(
    config: dict[str, Any], where: TopicPartition, limit: int, end: int
) -> list[dict[str, object]]:
    """Up to ``limit`` records of a partition from ``where``'s offset (not past ``end``)."""
    settings = {"group.id": "strom-console", "enable.auto.commit": False}
    consumer = KafkaConsumer({**config, **settings, "enable.partition.eof": True})
    offset = where.offset
    try:
        consumer.assign([where])
        found: list[dict[str, object]] = []
        deadline = time.monotonic() + BROWSE_WAIT_S
        while len(found) < limit and offset + len(found) < end and time.monotonic() < deadline:
            for message in consumer.consume(limit - len(found), 0.2):
                if message.error() is not None:
                    continue  # the partition's end, or a record this login may not read
                _, timestamp = message.timestamp()
                found.append(
                    {
                        "partition": message.partition(),
                        "offset": message.offset(),
                        "timestamp": timestamp,
                        "key": _text(message.key()),
                        "value": _text(message.value()),
                        "headers": [[k, _text(v)] for k, v in _headers(message)],
                    }
                )
        return found
    finally:
        consumer.close()


def _held(
    offsets: dict[tuple[str, int], tuple[int, int]], parts: list[PartitionView]
) -> dict[int, tuple[int, int]]:
    return {p.partition: offsets.get((p.topic, p.partition), (0, 0)) for p in parts}


def console_api(context: ProxyContext) -> list[Route]:
    async def list_topics(login: Login) -> Any:
        return await blocking(context.clients.admin(login).list_topics, timeout=10)

    snapshots: Snapshots[Login, Any] = Snapshots(list_topics)
    securities: dict[Login, ClientSecurity] = {}

    async def _call(future: Any) -> Any:
        try:
            return await result(future)
        except KafkaException as error:
            raise from_kafka(error) from error

    async def _described(request: Request, names: list[str]) -> list[Any]:
        if not names:
            return []
        futures = context.admin(request).describe_topics(TopicCollection(names))
        return [await _call(futures[name]) for name in names]

    async def _min_isr(request: Request, names: list[str]) -> dict[str, int]:
        """Each topic's ``min.insync.replicas`` (1 for one this login may not describe)."""
        if not names:
            return {}
        resources = [ConfigResource(ResourceType.TOPIC, name) for name in names]
        found = {}
        for resource, future in context.admin(request).describe_configs(resources).items():
            try:
                entry = (await result(future)).get("min.insync.replicas")
            except KafkaException:
                continue
            if entry is not None and entry.value is not None:
                found[resource.name] = int(entry.value)
        return found

    async def _metadata(request: Request) -> Any:
        """The cluster's Metadata answer (``list_topics``) of the request's login, at most
        ``MAX_AGE_S`` old."""
        return await snapshots.get(context.login(request))

    async def _at(
        request: Request, parts: Iterable[PartitionView], *timestamps: int
    ) -> list[dict[tuple[str, int], int]]:
        """For each of ``timestamps``, the partitions' offsets, asked of their leaders
        (``offsets.watermarks``); a partition without a leader, or whose leader could not
        answer, is left out."""
        leaders: dict[int, list[tuple[str, int]]] = {}
        for p in parts:
            if p.leader is not None and p.leader >= 0:
                leaders.setdefault(p.leader, []).append((p.topic, p.partition))
        if not leaders:
            return [{} for _ in timestamps]
        nodes = (await _call(context.admin(request).describe_cluster())).nodes
        addresses = {n.id: (n.host, n.port) for n in nodes}
        return await watermarks(leaders, addresses, _security(request), timestamps=timestamps)

    async def _offsets(
        request: Request, parts: Iterable[PartitionView]
    ) -> dict[tuple[str, int], tuple[int, int]]:
        """Each partition's earliest and latest offsets (those found)."""
        earliest, latest = await _at(request, parts, EARLIEST, LATEST)
        return {key: (earliest[key], latest[key]) for key in earliest.keys() & latest.keys()}

    def _security(request: Request) -> ClientSecurity:
        login = context.login(request)
        if login not in securities:
            securities[login] = librdkafka_security(context.clients.config(login))
        return securities[login]

    async def cluster(request: Request) -> Response:
        admin = context.admin(request)
        described = await _call(admin.describe_cluster())
        metadata = await _metadata(request)
        min_isr = await _min_isr(request, sorted(metadata.topics))
        live = [BrokerView(n.id, n.host, n.port, n.rack, alive=True) for n in described.nodes]
        controller = None if described.controller is None else described.controller.id
        partitions = (p for ps in _listed(metadata, min_isr).values() for p in ps)
        health = cluster_health(live, partitions, controller)
        return json_response({"cluster_id": described.cluster_id, **health})

    async def topics(request: Request) -> Response:
        """The topics page's rows; their records held (every partition's earliest and latest
        offsets, the costly part) only with ``?records=true``: the page paints without them
        first."""
        metadata = await _metadata(request)
        parts = _listed(metadata, await _min_isr(request, sorted(metadata.topics)))
        offsets = None
        if request.query_params.get("records") == "true":
            offsets = await _offsets(request, (p for ps in parts.values() for p in ps))
        rows = [
            topic_row(
                name,
                ps,
                None if offsets is None else _held(offsets, ps),
                internal=name in INTERNAL_TOPICS,
            )
            for name, ps in parts.items()
        ]
        return json_response(rows)

    async def topic(request: Request) -> Response:
        name = request.path_params["topic"]
        [described] = await _described(request, [name])
        resource = ConfigResource(ResourceType.TOPIC, name)
        [entries] = [
            await _call(f) for f in context.admin(request).describe_configs([resource]).values()
        ]
        min_isr = entries.get("min.insync.replicas")
        given = min_isr is not None and min_isr.value is not None
        parts = _partitions(described, {name: int(min_isr.value)} if given else None)
        offsets = await _offsets(request, parts)
        return json_response({
            "name": name,
            "partitions": [
                {"partition": p.partition, "leader": p.leader, "replicas": list(p.replicas),
                 "isr": list(p.isr), "earliest": offsets.get((name, p.partition), (0, 0))[0],
                 "latest": offsets.get((name, p.partition), (0, 0))[1],
                 "under_min_isr": p.under_min_isr}
                for p in parts
            ],
            "configs": [
                {"name": e.name, "value": None if e.is_sensitive else e.value,
                 "default": e.is_default, "read_only": e.is_read_only}
                for _, e in sorted(entries.items())
            ],
        })  # fmt: skip

    async def records(request: Request) -> Response:
        name = request.path_params["topic"]
        try:
            partition = int(request.query_params.get("partition", "0"))
            offset = int(request.query_params.get("offset", "0"))
            limit = min(MAX_RECORDS, int(request.query_params.get("limit", "50")))
            timestamp = request.query_params.get("timestamp")
            at = int(timestamp) if timestamp else None
        except ValueError:
            message = "partition, offset, timestamp and limit are integers"
            raise RestError(400, 400, message) from None
        [described] = await _described(request, [name])
        parts = [p for p in _partitions(described) if p.partition == partition]
        if not parts:
            raise RestError(404, 40402, "Partition not found.")
        key = (name, partition)
        earliest, latest = (await _offsets(request, parts)).get(key, (0, 0))
        if at is not None:  # the first record at or after it, as ListOffsets finds it
            [by_time] = await _at(request, parts, at)
            found = by_time.get(key, -1)
            offset = latest if found < 0 else found
        start = max(offset, earliest)
        config = context.clients.config(context.login(request))
        where = TopicPartition(name, partition, start)
        shown = await blocking(_browse, config, where, limit, latest)
        return json_response({"earliest": earliest, "latest": latest, "from": start,
                              "records": shown})  # fmt: skip

    async def groups(request: Request) -> Response:
        admin = context.admin(request)
        listed = await _call(admin.list_consumer_groups())
        names = sorted(g.group_id for g in listed.valid)
        if not names:
            return json_response([])
        described = admin.describe_consumer_groups(names)
        lags = await asyncio.gather(*(_group_lag(request, name) for name in names))
        rows = []
        for name, lag in zip(names, lags, strict=True):
            group = await _call(described[name])
            rows.append({"group": name, "state": group.state.name, "members": len(group.members),
                         "lag": sum(one["lag"] for one in lag)})  # fmt: skip
        return json_response(rows)

    async def _group_lag(request: Request, name: str) -> list[dict[str, Any]]:
        admin = context.admin(request)
        committed = await _call(
            admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(name)])[name]
        )
        positions = {(tp.topic, tp.partition): tp.offset for tp in committed.topic_partitions
                     if tp.offset >= 0}  # fmt: skip
        if not positions:
            return []
        [ends] = await _at(request, _led(await _metadata(request), positions), LATEST)
        return [
            {"topic": t, "partition": p, "current": current, "end": ends[(t, p)],
             "lag": max(0, ends[(t, p)] - current)}
            for (t, p), current in sorted(positions.items())
            if (t, p) in ends
        ]  # fmt: skip

    async def group(request: Request) -> Response:
        name = request.path_params["group"]
        described = await _call(context.admin(request).describe_consumer_groups([name])[name])
        return json_response({
            "group": name, "state": described.state.name,
            "members": [
                {"member": m.member_id, "client": m.client_id, "host": m.host,
                 "assignment": [f"{t.topic}-{t.partition}" for t in m.assignment.topic_partitions]}
                for m in described.members
            ],
            "lag": await _group_lag(request, name),
        })  # fmt: skip

    async def _reset_plan(
        request: Request, name: str, topics: list[str], target: ResetTarget
    ) -> list[dict[str, int | str]]:
        parts = [p for t in await _described(request, topics) for p in _partitions(t)]
        offsets = await _offsets(request, parts)
        by_time: dict[tuple[str, int], int] = {}
        if target.kind == "timestamp":
            [by_time] = await _at(request, parts, target.value or 0)
        current = {(lag["topic"], lag["partition"]): lag["current"]
                   for lag in await _group_lag(request, name)}  # fmt: skip
        return [
            {"topic": t, "partition": p, "current": current.get((t, p), -1),
             "new": new_offset(target, earliest, latest, by_time.get((t, p)))}
            for (t, p), (earliest, latest) in sorted(offsets.items())
        ]  # fmt: skip

    async def reset(request: Request) -> Response:
        """Plan (``dry_run``, the default) or make a reset of the group's offsets on ``topic``
        (or on every topic it has committed offsets on)."""
        name = request.path_params["group"]
        body = await context.json(request)
        if not isinstance(body, dict):
            raise RestError(400, 400, "a JSON object {topic, to, value, dry_run} is expected")
        try:
            target = parse_target(body)
        except ValueError as error:
            raise RestError(400, 400, str(error)) from None
        admin = context.admin(request)
        described = await _call(admin.describe_consumer_groups([name])[name])
        try:
            check_inactive(name, described.state.name)
        except ValueError as error:
            raise RestError(409, 40901, str(error)) from None
        topic = body.get("topic")
        topics = [topic] if isinstance(topic, str) and topic else sorted(
            {lag["topic"] for lag in await _group_lag(request, name)}
        )  # fmt: skip
        if not topics:
            raise RestError(400, 400, "topic: the group has no offsets; name a topic")
        plan = await _reset_plan(request, name, topics, target)
        dry_run = body.get("dry_run", True) is not False
        if not dry_run:
            offsets = [TopicPartition(str(p["topic"]), int(p["partition"]), int(p["new"]))
                       for p in plan]  # fmt: skip
            changes = ConsumerGroupTopicPartitions(name, offsets)
            await _call(admin.alter_consumer_group_offsets([changes])[name])
        return json_response({"group": name, "dry_run": dry_run, "offsets": plan})

    base = "/api/console"
    return [
        Route(f"{base}/cluster", cluster),
        Route(f"{base}/topics", topics),
        Route(f"{base}/topics/{{topic}}", topic),
        Route(f"{base}/topics/{{topic}}/records", records),
        Route(f"{base}/groups", groups),
        Route(f"{base}/groups/{{group}}", group),
        Route(f"{base}/groups/{{group}}/offsets:reset", reset, methods=["POST"]),
    ]
