"""v3's cluster, brokers, topics, partitions and replicas."""

from __future__ import annotations

from typing import Any

from confluent_kafka import KafkaException, TopicCollection
from confluent_kafka.admin import NewPartitions, NewTopic  # type: ignore[attr-defined]
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from strom.rest.context import ProxyContext
from strom.rest.errors import RestError, from_kafka, not_found
from strom.rest.gateway import blocking, result
from strom.rest.resources import Links
from strom.web.http import json_response

__all__ = ["topic_routes"]

_WITH_OPERATIONS = {"include_authorized_operations": True}


def _int(request: Request, name: str) -> int:
    text = request.path_params[name]
    try:
        return int(text)
    except ValueError:
        raise RestError(400, 400, f"{name}: expected an integer, got {text!r}") from None


async def _describe_topics(
    context: ProxyContext, request: Request, names: list[str], *, operations: bool = False
) -> list[Any]:
    if not names:
        return []
    futures = context.admin(request).describe_topics(
        TopicCollection(names), **(_WITH_OPERATIONS if operations else {})
    )
    try:
        return [await result(futures[name]) for name in names]
    except KafkaException as error:
        raise from_kafka(error) from error


def _topic(links: Links, described: Any) -> dict[str, object]:
    partitions = described.partitions
    return links.topic(
        described.name,
        internal=described.is_internal,
        replication_factor=len(partitions[0].replicas) if partitions else 0,
        partitions=len(partitions),
        operations=[op.name for op in described.authorized_operations or ()],
    )


async def _one_topic(context: ProxyContext, request: Request, name: str) -> Any:
    [described] = await _describe_topics(context, request, [name], operations=True)
    return described


def topic_routes(context: ProxyContext) -> list[Route]:
    async def clusters(request: Request) -> Response:
        links = await context.links(request)
        described = await result(context.admin(request).describe_cluster())
        controller = None if described.controller is None else described.controller.id
        return json_response(
            links.collection("KafkaClusterList", "", [links.cluster_resource(controller)])
        )

    async def cluster(request: Request) -> Response:
        links = await context.links(request)
        described = await result(context.admin(request).describe_cluster())
        controller = None if described.controller is None else described.controller.id
        return json_response(links.cluster_resource(controller))

    async def _brokers(request: Request) -> tuple[Links, dict[int, dict[str, object]]]:
        links = await context.links(request)
        described = await result(context.admin(request).describe_cluster())
        return links, {
            node.id: links.broker(node.id, node.host, node.port, node.rack)
            for node in sorted(described.nodes, key=lambda node: node.id)
        }

    async def brokers(request: Request) -> Response:
        links, found = await _brokers(request)
        return json_response(links.collection("KafkaBrokerList", "brokers", found.values()))

    async def broker(request: Request) -> Response:
        broker_id = _int(request, "broker_id")
        _, found = await _brokers(request)
        if broker_id not in found:
            raise not_found(f"Broker {broker_id} cannot be found.")
        return json_response(found[broker_id])

    async def topics(request: Request) -> Response:
        links = await context.links(request)
        listed = await _metadata(context, request)
        names = sorted(listed.topics)
        described = await _describe_topics(context, request, names)
        return json_response(
            links.collection("KafkaTopicList", "topics", (_topic(links, d) for d in described))
        )

    async def topic(request: Request) -> Response:
        links = await context.links(request)
        described = await _one_topic(context, request, request.path_params["topic_name"])
        return json_response(_topic(links, described))

    async def create_topic(request: Request) -> Response:
        links = await context.links(request)
        body = await context.json(request)
        if not isinstance(body, dict) or not isinstance(body.get("topic_name"), str):
            raise RestError(400, 400, "topic_name: a topic name is required")
        name = body["topic_name"]
        assignments = body.get("replicas_assignments") or None
        configs = {c["name"]: c.get("value") for c in body.get("configs", ())}
        try:
            if assignments:
                ordered = [assignments[key] for key in sorted(assignments, key=int)]
                new = NewTopic(name, replica_assignment=ordered, config=configs)
            else:
                new = NewTopic(
                    name,
                    num_partitions=int(body.get("partitions_count", -1)),
                    replication_factor=int(body.get("replication_factor", -1)),
                    config=configs,
                )
        except (ValueError, TypeError) as error:
            raise RestError(400, 400, f"Cannot create topic {name}: {error}") from None
        validate_only = bool(body.get("validate_only", False))
        futures = context.admin(request).create_topics([new], validate_only=validate_only)
        try:
            await result(futures[name])
        except KafkaException as error:
            raise from_kafka(error) from error
        if validate_only:
            shape = links.topic(
                name,
                internal=False,
                replication_factor=max(0, new.replication_factor),
                partitions=max(0, new.num_partitions),
            )
            return json_response(shape, 201)
        described = await _one_topic(context, request, name)
        return json_response(_topic(links, described), 201)

    async def delete_topic(request: Request) -> Response:
        await context.links(request)
        name = request.path_params["topic_name"]
        futures = context.admin(request).delete_topics([name])
        try:
            await result(futures[name])
        except KafkaException as error:
            raise from_kafka(error) from error
        return Response(status_code=204)

    async def update_partitions(request: Request) -> Response:
        links = await context.links(request)
        name = request.path_params["topic_name"]
        body = await context.json(request)
        count = body.get("partitions_count") if isinstance(body, dict) else None
        if not isinstance(count, int):
            raise RestError(400, 400, "partitions_count: an integer is required")
        futures = context.admin(request).create_partitions([NewPartitions(name, count)])
        try:
            await result(futures[name])
        except KafkaException as error:
            raise from_kafka(error) from error
        return json_response(_topic(links, await _one_topic(context, request, name)))

    async def _partitions(request: Request) -> tuple[Links, str, list[Any]]:
        links = await context.links(request)
        name = request.path_params["topic_name"]
        described = await _one_topic(context, request, name)
        return links, name, described.partitions

    def _partition_of(request: Request, partitions: list[Any]) -> Any:
        wanted = _int(request, "partition_id")
        for partition in partitions:
            if partition.id == wanted:
                return partition
        raise RestError(404, 40403, "This server does not host this topic-partition.")

    async def partitions(request: Request) -> Response:
        links, name, found = await _partitions(request)
        data = (
            links.partition(name, p.id, None if p.leader is None else p.leader.id) for p in found
        )
        return json_response(
            links.collection("KafkaPartitionList", f"topics/{name}/partitions", data)
        )

    async def partition(request: Request) -> Response:
        links, name, found = await _partitions(request)
        p = _partition_of(request, found)
        return json_response(links.partition(name, p.id, None if p.leader is None else p.leader.id))

    def _replicas(links: Links, name: str, p: Any) -> list[dict[str, object]]:
        leader = None if p.leader is None else p.leader.id
        in_sync = {node.id for node in p.isr}
        return [
            links.replica(name, p.id, node.id, leader=node.id == leader, in_sync=node.id in in_sync)
            for node in p.replicas
        ]

    async def replicas(request: Request) -> Response:
        links, name, found = await _partitions(request)
        p = _partition_of(request, found)
        path = f"topics/{name}/partitions/{p.id}/replicas"
        return json_response(links.collection("KafkaReplicaList", path, _replicas(links, name, p)))

    async def replica(request: Request) -> Response:
        links, name, found = await _partitions(request)
        p = _partition_of(request, found)
        broker_id = _int(request, "broker_id")
        for shape in _replicas(links, name, p):
            if shape["broker_id"] == broker_id:
                return json_response(shape)
        raise not_found(f"Replica {broker_id} of {name}-{p.id} cannot be found.")

    c = "/v3/clusters/{cluster_id}"
    t = f"{c}/topics/{{topic_name}}"
    return [
        Route("/v3/clusters", clusters),
        Route(c, cluster),
        Route(f"{c}/brokers", brokers),
        Route(f"{c}/brokers/{{broker_id}}", broker),
        Route(f"{c}/topics", topics, methods=["GET"]),
        Route(f"{c}/topics", create_topic, methods=["POST"]),
        Route(t, topic, methods=["GET"]),
        Route(t, delete_topic, methods=["DELETE"]),
        Route(t, update_partitions, methods=["PATCH"]),
        Route(f"{t}/partitions", partitions),
        Route(f"{t}/partitions/{{partition_id}}", partition),
        Route(f"{t}/partitions/{{partition_id}}/replicas", replicas),
        Route(f"{t}/partitions/{{partition_id}}/replicas/{{broker_id}}", replica),
    ]


async def _metadata(context: ProxyContext, request: Request) -> Any:
    try:
        return await blocking(context.admin(request).list_topics, timeout=10)
    except KafkaException as error:
        raise from_kafka(error) from error
