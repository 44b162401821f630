"""The steps AlterConfigs (:mod:`.alter_configs`) and IncrementalAlterConfigs
(:mod:`.incremental_alter_configs`) share.

Resources the client may not alter (ALTER_CONFIGS on the topic or group, on the cluster for
the others) are refused; the controller validates the rest (unknown settings and bad values are
INVALID_CONFIG, a missing topic UNKNOWN_TOPIC_OR_PARTITION) and writes the differences; one log
line per resource tells what changed, or why not. The two APIs differ only in what a request
means (a whole new set of overrides, or operations on the current ones), so each names its
parsing, its controller call, the description of a change and its response class.
"""

from __future__ import annotations

import abc
import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar, Generic, TypeVar

from kio.static.primitive import i8
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode
from strom.controller import (
    AlterConfigsRequest,
    AlterConfigsResult,
    ApiError,
    IncrementalAlterConfigsRequest,
)
from strom.metadata import ConfigResourceType
from strom.protocol.api import ApiKey, VersionRange, api_name
from strom.security.acls import AclOperation
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import for_version
from strom.server.handlers.common import config_refusal

__all__ = ["ConfigsAlterHandler", "resource_responses"]

T = TypeVar("T")
RequestT = TypeVar("RequestT", AlterConfigsRequest, IncrementalAlterConfigsRequest)


class ConfigsAlterHandler(abc.ABC, Generic[RequestT]):
    """An alter-configs handler; a subclass names what differs."""

    api_key: ClassVar[ApiKey]
    versions: ClassVar[VersionRange]

    @staticmethod
    @abc.abstractmethod
    def parse(body: object) -> RequestT:
        """The request, as the controller takes it, from a body of any version."""

    @abc.abstractmethod
    async def alter(self, request: RequestT) -> list[AlterConfigsResult]:
        """The controller's answer for each resource of ``request``."""

    @staticmethod
    @abc.abstractmethod
    def describe(request: RequestT) -> Mapping[tuple[int, str], str]:
        """What ``request`` asks of each resource (type and name), for the log lines."""

    @staticmethod
    @abc.abstractmethod
    def answer(results: Sequence[AlterConfigsResult]) -> ResponsePayload:
        """The newest version's response (see :func:`resource_responses`)."""

    async def handle(self, context: RequestContext) -> ResponsePayload:
        request: RequestT  # declared: mypy cannot type an unpacking that an await follows
        refused: list[AlterConfigsResult]
        request, refused = _allowed(context, self.parse(context.body))
        results = [*await self.alter(request), *refused]
        _log_changes(
            logging.getLogger(type(self).__module__),
            api=api_name(self.api_key),
            client=context.client_address,
            results=results,
            changes=self.describe(request),
            validate_only=request.validate_only,
        )
        return for_version(self.answer(results), context.api_version)

    @classmethod
    def refusal(cls, context: RequestContext, code: ErrorCode) -> ResponsePayload:
        """Every resource of the request refused with ``code`` (the controller was not reached)."""
        results = [
            AlterConfigsResult(r.resource_type, r.resource_name, ApiError(code))
            for r in cls.parse(context.body).resources
        ]
        return for_version(cls.answer(results), context.api_version)


def resource_responses(
    entry: Callable[..., T], results: Sequence[AlterConfigsResult]
) -> tuple[T, ...]:
    """The per-resource answers, whose classes (each API's ``AlterConfigsResourceResponse``)
    have the same fields."""
    return tuple(
        entry(
            error_code=result.error.code,
            error_message=result.error.message if result.error.is_failure else None,
            resource_type=i8(result.resource_type),
            resource_name=result.resource_name,
        )
        for result in results
    )


def _allowed(
    context: RequestContext, request: RequestT
) -> tuple[RequestT, list[AlterConfigsResult]]:
    """``request`` with only the resources the client may alter (ALTER_CONFIGS), and the
    others' refusals."""
    allowed = []
    refused: list[AlterConfigsResult] = []
    for resource in request.resources:
        name, kind = resource.resource_name, resource.resource_type
        error = config_refusal(context, kind, name, AclOperation.ALTER_CONFIGS)
        if error is None:
            allowed.append(resource)
        else:
            refused.append(AlterConfigsResult(kind, name, ApiError(error)))
    return dataclasses.replace(request, resources=allowed), refused


def _resource_label(resource_type: int, name: str) -> str:
    """``topic orders``, ``broker 1``, ``cluster-wide broker defaults``, for log lines."""
    if resource_type == ConfigResourceType.TOPIC:
        return f"topic {name}"
    if resource_type == ConfigResourceType.BROKER:
        return f"broker {name}" if name else "cluster-wide broker defaults"
    return f"resource type {resource_type} {name!r}"


def _log_changes(
    log: logging.Logger,
    *,
    api: str,
    client: str,
    results: Sequence[AlterConfigsResult],
    changes: Mapping[tuple[int, str], str],
    validate_only: bool,
) -> None:
    """One line per resource: what changed, or why not; ``changes`` describes each request."""
    for result in results:
        label = _resource_label(result.resource_type, result.resource_name)
        change = changes.get((result.resource_type, result.resource_name), "")
        if result.error.is_failure:
            log.info(
                "%s from %s: %s not changed: %s (%s)",
                api,
                client,
                label,
                result.error.message,
                result.error.code.name.upper(),
            )
        elif validate_only:
            log.info("%s from %s: %s: %s would be valid", api, client, label, change)
        else:
            log.info("configs of %s changed: %s", label, change)
