"""v3's ACLs: search (GET with the filter as query parameters), create (one, or a batch), and
delete (the filter as query parameters; the answer lists what went)."""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from typing import Any, Final, TypeVar

from confluent_kafka import KafkaException
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
    ResourceType,
)
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from strom.rest.context import ProxyContext
from strom.rest.errors import RestError, from_kafka
from strom.rest.gateway import result
from strom.rest.resources import Links
from strom.web.http import json_response

__all__ = ["acl_routes"]

E = TypeVar("E", bound=Enum)
CLUSTER_NAME: Final = "kafka-cluster"
_ACL_FIELDS: Final = (
    "resource_type",
    "resource_name",
    "pattern_type",
    "principal",
    "host",
    "operation",
    "permission",
)


def _enum(kind: type[E], text: object, field: str) -> E:
    try:
        return kind[str(text).upper()]
    except KeyError:
        names = ", ".join(member.name for member in kind)
        raise RestError(400, 400, f"{field}: expected one of {names}, got {text!r}") from None


def _resource_type(text: object) -> ResourceType:
    """The proxy's CLUSTER is librdkafka's BROKER."""
    name = str(text).upper()
    return _enum(ResourceType, "BROKER" if name == "CLUSTER" else name, "resource_type")


def _acl(links: Links, binding: Any) -> dict[str, object]:
    """An ``AclBinding`` as the proxy shows it (its fields hold the enums once made)."""
    kind = binding.restype.name
    return links.acl(
        {
            "resource_type": "CLUSTER" if kind == "BROKER" else kind,
            "resource_name": binding.name,
            "pattern_type": binding.resource_pattern_type.name,
            "principal": binding.principal,
            "host": binding.host,
            "operation": binding.operation.name,
            "permission": binding.permission_type.name,
        }
    )


def _filter(query: Mapping[str, str]) -> AclBindingFilter:
    resource = _resource_type(query.get("resource_type", "UNKNOWN"))
    if resource == ResourceType.UNKNOWN:
        raise RestError(400, 400, "resource_type cannot be unspecified or UNKNOWN")
    return AclBindingFilter(
        resource,
        query.get("resource_name"),  # type: ignore[arg-type]  # None: any name
        _enum(ResourcePatternType, query.get("pattern_type", "ANY"), "pattern_type"),
        query.get("principal"),  # type: ignore[arg-type]
        query.get("host"),  # type: ignore[arg-type]
        _enum(AclOperation, query.get("operation", "ANY"), "operation"),
        _enum(AclPermissionType, query.get("permission", "ANY"), "permission"),
    )


def _binding(body: Any) -> AclBinding:
    if not isinstance(body, Mapping):
        raise RestError(400, 400, "expected an ACL object")
    missing = [name for name in _ACL_FIELDS if body.get(name) is None]
    if missing:
        raise RestError(400, 400, f"{missing[0]}: required")
    resource = _resource_type(body["resource_type"])
    if resource == ResourceType.BROKER and body["resource_name"] != CLUSTER_NAME:
        raise RestError(
            400, 40002, f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
        )
    return AclBinding(
        resource,
        body["resource_name"],
        _enum(ResourcePatternType, body["pattern_type"], "pattern_type"),
        body["principal"],
        body["host"],
        _enum(AclOperation, body["operation"], "operation"),
        _enum(AclPermissionType, body["permission"], "permission"),
    )


def acl_routes(context: ProxyContext) -> list[Route]:
    async def search(request: Request) -> Response:
        links = await context.links(request)
        try:
            found = await result(
                context.admin(request).describe_acls(_filter(request.query_params))
            )
        except KafkaException as error:
            raise from_kafka(error) from error
        return json_response(
            links.collection("KafkaAclList", "acls", (_acl(links, b) for b in found))
        )

    async def _create(request: Request, bindings: list[AclBinding]) -> None:
        await context.links(request)
        futures = context.admin(request).create_acls(bindings)
        try:
            for future in futures.values():
                await result(future)
        except KafkaException as error:
            raise from_kafka(error) from error

    async def create(request: Request) -> Response:
        await _create(request, [_binding(await context.json(request))])
        return Response(status_code=201)

    async def create_batch(request: Request) -> Response:
        body = await context.json(request)
        if not isinstance(body, Mapping) or not isinstance(body.get("data"), list):
            raise RestError(400, 400, "data: an array of ACLs is required")
        await _create(request, [_binding(item) for item in body["data"]])
        return Response(status_code=204)

    async def delete(request: Request) -> Response:
        links = await context.links(request)
        futures = context.admin(request).delete_acls([_filter(request.query_params)])
        try:
            deleted = [b for future in futures.values() for b in await result(future)]
        except KafkaException as error:
            raise from_kafka(error) from error
        return json_response({"data": [_acl(links, b) for b in deleted]})

    base = "/v3/clusters/{cluster_id}/acls"
    return [
        Route(base, search, methods=["GET"]),
        Route(base, create, methods=["POST"]),
        Route(base, delete, methods=["DELETE"]),
        Route(f"{base}:batch", create_batch, methods=["POST"]),
    ]
