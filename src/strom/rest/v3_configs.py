"""v3's topic and broker configs: list, get, set, reset (DELETE) and batch alter, through
DescribeConfigs and IncrementalAlterConfigs."""

from __future__ import annotations

from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ResourceType,
)
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from strom.rest.context import ProxyContext
from strom.rest.errors import RestError, from_kafka, not_found
from strom.rest.gateway import result
from strom.rest.resources import ConfigOwner, ConfigValue, Links
from strom.web.http import json_response

__all__ = ["config_routes"]

_SOURCES = {"UNKNOWN_CONFIG": "UNKNOWN"}


def _source(source: Any) -> str:
    """A ``ConfigSource`` (a synonym's may come as its number) by the proxy's name."""
    name = ConfigSource(source).name
    return _SOURCES.get(name, name)


def _value(entry: Any) -> ConfigValue:
    return ConfigValue(
        name=entry.name,
        value=entry.value,
        default=entry.is_default,
        read_only=entry.is_read_only,
        sensitive=entry.is_sensitive,
        source=_source(entry.source),
        synonyms=tuple((s.name, s.value, _source(s.source)) for s in entry.synonyms.values()),
    )


def _owner(request: Request) -> tuple[ConfigOwner, ConfigResource]:
    params = request.path_params
    if "topic_name" in params:
        topic = params["topic_name"]
        return ConfigOwner(topic=topic), ConfigResource(ResourceType.TOPIC, topic)
    text = params["broker_id"]
    if not text.isdigit():
        raise RestError(400, 400, f"broker_id: expected an integer, got {text!r}")
    return ConfigOwner(broker=int(text)), ConfigResource(ResourceType.BROKER, text)


def _collection_path(owner: ConfigOwner) -> tuple[str, str]:
    if owner.topic is not None:
        return "KafkaTopicConfigList", f"topics/{owner.topic}/configs"
    return "KafkaBrokerConfigList", f"brokers/{owner.broker}/configs"


async def _describe(
    context: ProxyContext, request: Request
) -> tuple[Links, ConfigOwner, dict[str, Any]]:
    links = await context.links(request)
    owner, resource = _owner(request)
    futures = context.admin(request).describe_configs([resource])
    try:
        [entries] = [await result(f) for f in futures.values()]
    except KafkaException as error:
        raise from_kafka(error) from error
    return links, owner, entries


async def _alter(
    context: ProxyContext,
    request: Request,
    changes: list[tuple[str, str | None, AlterConfigOpType]],
    *,
    validate_only: bool = False,
) -> None:
    await context.links(request)
    _, resource = _owner(request)
    resource = ConfigResource(
        resource.restype,
        resource.name,
        incremental_configs=[
            ConfigEntry(name, value, incremental_operation=op) for name, value, op in changes
        ],
    )
    futures = context.admin(request).incremental_alter_configs(
        [resource], validate_only=validate_only
    )
    try:
        for future in futures.values():
            await result(future)
    except KafkaException as error:
        raise from_kafka(error) from error


def config_routes(context: ProxyContext) -> list[Route]:
    async def configs(request: Request) -> Response:
        links, owner, entries = await _describe(context, request)
        kind, path = _collection_path(owner)
        data = (links.config(owner, _value(e)) for _, e in sorted(entries.items()))
        return json_response(links.collection(kind, path, data))

    async def config(request: Request) -> Response:
        links, owner, entries = await _describe(context, request)
        name = request.path_params["name"]
        if name not in entries:
            raise not_found(f"Config {name} cannot be found.")
        return json_response(links.config(owner, _value(entries[name])))

    async def update(request: Request) -> Response:
        body = await context.json(request)
        if not isinstance(body, dict) or not isinstance(body.get("value"), str | None):
            raise RestError(400, 400, "value: a string is required")
        name = request.path_params["name"]
        await _alter(context, request, [(name, body.get("value"), AlterConfigOpType.SET)])
        return Response(status_code=204)

    async def reset(request: Request) -> Response:
        name = request.path_params["name"]
        await _alter(context, request, [(name, None, AlterConfigOpType.DELETE)])
        return Response(status_code=204)

    async def alter(request: Request) -> Response:
        body = await context.json(request)
        if not isinstance(body, dict) or not isinstance(body.get("data"), list):
            raise RestError(400, 400, "data: an array of {name, value, operation} is required")
        changes = []
        for item in body["data"]:
            operation = str(item.get("operation") or "SET").upper()
            if operation not in ("SET", "DELETE") or not isinstance(item.get("name"), str):
                raise RestError(400, 400, "data: each needs a name, and operation SET or DELETE")
            changes.append((item["name"], item.get("value"), AlterConfigOpType[operation]))
        validate_only = bool(body.get("validate_only", False))
        await _alter(context, request, changes, validate_only=validate_only)
        return Response(status_code=204)

    routes = []
    for owner in ("/topics/{topic_name}", "/brokers/{broker_id}"):
        base = f"/v3/clusters/{{cluster_id}}{owner}/configs"
        routes += [
            Route(base, configs),
            Route(f"{base}:alter", alter, methods=["POST"]),
            Route(f"{base}/{{name}}", config, methods=["GET"]),
            Route(f"{base}/{{name}}", update, methods=["PUT"]),
            Route(f"{base}/{{name}}", reset, methods=["DELETE"]),
        ]
    return routes
