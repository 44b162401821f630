"""The answers of the topic mutations and config changes when the controller was not reached
(``error_response``: a forwarding broker's answer, or NOT_CONTROLLER): every entry of the
request refused with the code, no throttle, in every version, through the real codec."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from admin_requests import (
    alter_configs_request,
    create_partitions_request,
    create_topics_request,
    delete_topics_request,
    incremental_alter_configs_request,
)

from strom.common import ErrorCode
from strom.metadata import ConfigResourceType
from strom.protocol.api import (
    KAFKA_BROKER_VERSIONS,
    ApiKey,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    make_request_header,
)
from strom.server.api.handler_table import RequestContext
from strom.server.controller.handlers import (
    alter_configs,
    create_partitions,
    create_topics,
    delete_topics,
    incremental_alter_configs,
)

CODE = ErrorCode.not_controller
TOPIC = ConfigResourceType.TOPIC


def refused(error_response: Callable[[RequestContext, ErrorCode], Any], body: Any) -> Any:
    """``error_response``'s answer to ``body``, after a trip through the codec both ways."""
    header = make_request_header(body, correlation_id=7, client_id="test")
    request = decode_request(
        encode_request(header=header, body=body), versions=KAFKA_BROKER_VERSIONS
    )
    context = RequestContext(request=request, client_address="test:1", connection_id="t")
    frame = encode_response(correlation_id=7, body=error_response(context, CODE))
    _, decoded = decode_response(frame, api_key=request.api_key, api_version=request.api_version)
    assert decoded.throttle_time.total_seconds() == 0
    return decoded


def versions(api: ApiKey) -> list[int]:
    return list(KAFKA_BROKER_VERSIONS[api])


@pytest.mark.parametrize("version", versions(ApiKey.CREATE_TOPICS))
def test_create_topics(version: int) -> None:
    body = create_topics_request(version, [("a", 1, -1, {}), ("b", 2, -1, {})])
    answer = refused(create_topics.error_response, body)
    assert [(t.name, t.error_code) for t in answer.topics] == [("a", CODE), ("b", CODE)]


@pytest.mark.parametrize("version", versions(ApiKey.CREATE_PARTITIONS))
def test_create_partitions(version: int) -> None:
    answer = refused(create_partitions.error_response, create_partitions_request(version, "a", 3))
    assert [(t.name, t.error_code) for t in answer.results] == [("a", CODE)]


@pytest.mark.parametrize("version", versions(ApiKey.DELETE_TOPICS))
def test_delete_topics(version: int) -> None:
    answer = refused(delete_topics.error_response, delete_topics_request(version, ["a", "b"]))
    assert [(t.name, t.error_code) for t in answer.responses] == [("a", CODE), ("b", CODE)]


@pytest.mark.parametrize("version", versions(ApiKey.ALTER_CONFIGS))
def test_alter_configs(version: int) -> None:
    body = alter_configs_request(version, TOPIC, "a", {"retention.ms": "1000"})
    answer = refused(alter_configs.error_response, body)
    assert [(r.resource_name, r.resource_type, r.error_code) for r in answer.responses] == [
        ("a", TOPIC, CODE)
    ]


@pytest.mark.parametrize("version", versions(ApiKey.INCREMENTAL_ALTER_CONFIGS))
def test_incremental_alter_configs(version: int) -> None:
    body = incremental_alter_configs_request(version, TOPIC, "a", [("retention.ms", 0, "1000")])
    answer = refused(incremental_alter_configs.error_response, body)
    assert [(r.resource_name, r.resource_type, r.error_code) for r in answer.responses] == [
        ("a", TOPIC, CODE)
    ]
