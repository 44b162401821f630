"""DescribeConfigs (API key 32), v1 to v4: topic, broker and group settings with their sources.

As Kafka's ``ConfigHelper.describeConfigs``:

* a topic resource lists every topic setting (or the requested keys; unknown keys are left
  out, a null or empty list means all): UNKNOWN_TOPIC_OR_PARTITION for a missing topic,
  INVALID_TOPIC_EXCEPTION for a name Kafka would not accept;
* a broker resource named by this node's id lists every broker setting with its effective
  value; the empty name lists the cluster-wide dynamic defaults only; another id, or a name
  that is not a number, is INVALID_REQUEST;
* a group resource lists every group setting (Kafka 4.0's, ``strom.config.group_config``):
  the group's override or the broker's default; the group need not exist; an empty name is
  INVALID_REQUEST;
* other resource types are INVALID_REQUEST (broker loggers and client metrics are not served
  yet).

Values, sources, synonyms, read-only flags and types come from
:class:`strom.server.configs.config_entries.ConfigDescriber`; synonyms only when
``include_synonyms``
and documentation only when ``include_documentation`` (v3+).
"""

from __future__ import annotations

from typing import Final

from kio.schema.describe_configs.v4 import request as newest
from kio.schema.describe_configs.v4 import response as latest
from kio.static.primitive import i8
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode, KafkaError
from strom.controller import invalid_topic_reason
from strom.metadata import ConfigResourceType, MetadataImage
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.security.acls import AclOperation
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import as_newest, for_version, request_field
from strom.server.api.metadata_view import MetadataView
from strom.server.api.throttle import NO_THROTTLE
from strom.server.configs.config_entries import ConfigDescriber, DescribedConfig
from strom.server.handlers.common import config_refusal

__all__ = ["DescribeConfigsHandler"]


class DescribeConfigsHandler:
    api_key: Final = ApiKey.DESCRIBE_CONFIGS
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.DESCRIBE_CONFIGS]

    def __init__(self, metadata: MetadataView, describer: ConfigDescriber) -> None:
        self._metadata = metadata
        self._describer = describer

    async def handle(self, context: RequestContext) -> ResponsePayload:
        request = as_newest(context.body, newest.DescribeConfigsRequest)
        include_synonyms = request_field(request, "include_synonyms", False)
        include_documentation = request_field(request, "include_documentation", False)
        image = self._metadata.image
        results: list[latest.DescribeConfigsResult] = []
        for resource in request.resources:
            refusal = config_refusal(
                context,
                resource.resource_type,
                resource.resource_name,
                AclOperation.DESCRIBE_CONFIGS,
            )
            if refusal is not None:
                results.append(_failed(resource, refusal, None))
                continue
            try:
                entries = self._describe(image, resource)
            except KafkaError as error:
                results.append(_failed(resource, error.error_code, error.message))
                continue
            results.append(
                latest.DescribeConfigsResult(
                    error_code=ErrorCode.none,
                    error_message=None,
                    resource_type=resource.resource_type,
                    resource_name=resource.resource_name,
                    configs=tuple(
                        _entry(entry, include_synonyms, include_documentation) for entry in entries
                    ),
                )
            )
        response = latest.DescribeConfigsResponse(throttle_time=NO_THROTTLE, results=tuple(results))
        return for_version(response, context.api_version)

    def _describe(
        self, image: MetadataImage, resource: newest.DescribeConfigsResource
    ) -> list[DescribedConfig]:
        names = resource.configuration_keys
        name = resource.resource_name
        if int(resource.resource_type) == ConfigResourceType.TOPIC:
            reason = invalid_topic_reason(name)
            if reason is not None:
                raise KafkaError(ErrorCode.invalid_topic_exception, reason)
            if image.topic(name) is None:
                raise KafkaError(
                    ErrorCode.unknown_topic_or_partition, f"topic {name!r} does not exist"
                )
            return self._describer.topic(image, name, names=names)
        if int(resource.resource_type) == ConfigResourceType.BROKER:
            if not name:
                return self._describer.cluster_defaults(image, names=names)
            if not (name.isascii() and name.lstrip("-").isdigit()):
                raise KafkaError(
                    ErrorCode.invalid_request, f"Broker id must be an integer, but it is: {name}"
                )
            if int(name) != self._describer.node_id:
                raise KafkaError(
                    ErrorCode.invalid_request,
                    f"Unexpected broker id, expected {self._describer.node_id} or empty string, "
                    f"but received {name}",
                )
            return self._describer.broker(image, names=names)
        if int(resource.resource_type) == ConfigResourceType.GROUP:
            if not name:
                raise KafkaError(ErrorCode.invalid_request, "Group name must not be empty")
            return self._describer.group(image, name, names=names)
        raise KafkaError(
            ErrorCode.invalid_request,
            f"Unsupported resource type: {resource.resource_type}",
        )


def _entry(
    entry: DescribedConfig, include_synonyms: bool, include_documentation: bool
) -> latest.DescribeConfigsResourceResult:
    return latest.DescribeConfigsResourceResult(
        name=entry.name,
        value=entry.value,
        read_only=entry.read_only,
        config_source=i8(entry.source),
        is_sensitive=entry.is_sensitive,
        synonyms=tuple(
            latest.DescribeConfigsSynonym(name=s.name, value=s.value, source=i8(s.source))
            for s in entry.synonyms
        )
        if include_synonyms
        else (),
        config_type=i8(entry.config_type),
        documentation=entry.documentation if include_documentation else None,
    )


def _failed(
    resource: newest.DescribeConfigsResource, code: ErrorCode, message: str | None
) -> latest.DescribeConfigsResult:
    return latest.DescribeConfigsResult(
        error_code=code,
        error_message=message,
        resource_type=resource.resource_type,
        resource_name=resource.resource_name,
        configs=(),
    )
