"""The v2 API's produce (``POST /topics/{topic}`` and ``/topics/{topic}/partitions/{p}``, the
format named by the content type) and its metadata (``/topics``, ``/brokers``, partitions).
Consumers are in ``v2_consumers``."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Final

from confluent_kafka import KafkaException, TopicCollection
from confluent_kafka.admin import ConfigResource, ResourceType  # type: ignore[attr-defined]
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from strom.registry.codec import RegistryCodec
from strom.rest import schemas
from strom.rest.context import ProxyContext
from strom.rest.errors import RestError, from_kafka
from strom.rest.gateway import blocking, result
from strom.rest.records import DataSpec
from strom.rest.v2_formats import FORMATS, V2_JSON, format_of
from strom.web.http import json_response

__all__ = ["v2_json", "v2_routes"]

TOPIC_NOT_FOUND: Final = RestError(404, 40401, "Topic not found.")
PARTITION_NOT_FOUND: Final = RestError(404, 40402, "Partition not found.")


def v2_json(body: object, status: int = 200) -> Response:
    return json_response(body, status, media_type=V2_JSON)


def _spec(
    fmt: str, body: Mapping[str, Any], record: Mapping[str, Any], part: str
) -> DataSpec | None:
    if part not in record:
        return None
    schema, schema_id = body.get(f"{part}_schema"), body.get(f"{part}_schema_id")
    if fmt in ("avro", "jsonschema", "protobuf") and schema is None and schema_id is None:
        code = 42201 if part == "key" else 42202
        raise RestError(
            422,
            code,
            f"Request includes {part}s and uses a format that requires schemas, but does not"
            f" include the {part}_schema or {part}_schema_id fields",
        )
    return DataSpec(type=FORMATS[fmt], data=record[part], schema=schema, schema_id=schema_id)


def v2_routes(context: ProxyContext, registry: RegistryCodec | None) -> list[Route]:
    async def _described(request: Request, topic: str) -> Any:
        futures = context.admin(request).describe_topics(TopicCollection([topic]))
        try:
            return await result(futures[topic])
        except KafkaException as error:
            refused = from_kafka(error)
            raise TOPIC_NOT_FOUND if refused.error_code == 40403 else refused from error

    async def _one(
        request: Request, topic: str, fmt: str, body: Mapping[str, Any], record: Any,
        *, partition: int | None,
    ) -> tuple[dict[str, object], int | None, int | None]:  # fmt: skip
        """The offsets entry of one record, and the schema ids its key and value used."""
        if not isinstance(record, Mapping):
            raise RestError(422, 42206, "Payload error. Each record must be an object.")
        key, value = _spec(fmt, body, record, "key"), _spec(fmt, body, record, "value")
        if partition is None and record.get("partition") is not None:
            partition = int(record["partition"])
        try:
            encoded = [
                await blocking(schemas.encode, registry, spec, topic, is_key=is_key)
                for spec, is_key in ((key, True), (value, False))
            ]
            message = await context.producer(request).send(
                topic, partition=partition, key=encoded[0].data, value=encoded[1].data,
                headers=[], timestamp_ms=None,
            )  # fmt: skip
        except KafkaException as error:
            refused = from_kafka(error)
            failed: dict[str, object] = {"partition": partition, "offset": None,
                      "error_code": refused.error_code, "error": refused.message}  # fmt: skip
            return failed, None, None
        ids = [None if e.report is None else e.report.get("schema_id") for e in encoded]
        entry = {"partition": message.partition(), "offset": message.offset(),
                 "error_code": None, "error": None}  # fmt: skip
        return entry, ids[0], ids[1]  # type: ignore[return-value]

    async def produce(request: Request) -> Response:
        topic = request.path_params["topic_name"]
        fmt = format_of(request.headers.get("content-type"))
        body = await context.json(request)
        if not isinstance(body, Mapping) or not isinstance(body.get("records"), list):
            raise RestError(422, 42206, "Payload error. records: an array is required.")
        described = await _described(request, topic)
        partition = None
        if "partition_id" in request.path_params:
            text = request.path_params["partition_id"]
            if not text.isdigit() or int(text) >= len(described.partitions):
                raise PARTITION_NOT_FOUND
            partition = int(text)
        answers = await asyncio.gather(
            *(_one(request, topic, fmt, body, r, partition=partition) for r in body["records"])
        )
        key_ids = {k for _, k, _ in answers if k is not None}
        value_ids = {v for _, _, v in answers if v is not None}
        return v2_json({
            "key_schema_id": next(iter(key_ids), None),
            "value_schema_id": next(iter(value_ids), None),
            "offsets": [entry for entry, _, _ in answers],
        })  # fmt: skip

    async def topics(request: Request) -> Response:
        try:
            metadata = await blocking(context.admin(request).list_topics, timeout=10)
        except KafkaException as error:
            raise from_kafka(error) from error
        return v2_json(sorted(metadata.topics))

    def _partition(p: Any) -> dict[str, object]:
        leader = None if p.leader is None else p.leader.id
        in_sync = {node.id for node in p.isr}
        return {
            "partition": p.id,
            "leader": leader,
            "replicas": [
                {"broker": n.id, "leader": n.id == leader, "in_sync": n.id in in_sync}
                for n in p.replicas
            ],
        }

    async def topic(request: Request) -> Response:
        name = request.path_params["topic_name"]
        described = await _described(request, name)
        resource = ConfigResource(ResourceType.TOPIC, name)
        try:
            [entries] = [await result(f) for f in
                         context.admin(request).describe_configs([resource]).values()]  # fmt: skip
        except KafkaException as error:
            raise from_kafka(error) from error
        return v2_json({
            "name": name,
            "configs": {entry.name: entry.value for entry in entries.values()},
            "partitions": [_partition(p) for p in described.partitions],
        })  # fmt: skip

    async def partitions(request: Request) -> Response:
        described = await _described(request, request.path_params["topic_name"])
        return v2_json([_partition(p) for p in described.partitions])

    async def partition(request: Request) -> Response:
        described = await _described(request, request.path_params["topic_name"])
        text = request.path_params["partition_id"]
        for p in described.partitions:
            if str(p.id) == text:
                return v2_json(_partition(p))
        raise PARTITION_NOT_FOUND

    async def brokers(request: Request) -> Response:
        described = await result(context.admin(request).describe_cluster())
        return v2_json({"brokers": sorted(node.id for node in described.nodes)})

    t = "/topics/{topic_name}"
    return [
        Route("/topics", topics),
        Route(t, topic, methods=["GET"]),
        Route(t, produce, methods=["POST"]),
        Route(f"{t}/partitions", partitions),
        Route(f"{t}/partitions/{{partition_id}}", partition, methods=["GET"]),
        Route(f"{t}/partitions/{{partition_id}}", produce, methods=["POST"]),
        Route("/brokers", brokers),
    ]
