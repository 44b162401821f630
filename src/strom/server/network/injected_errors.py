"""Answers carrying an error a test injected (``strom.testing``'s ``broker.faults.fail``).

An injected error fills every error field of a well-formed response of the request's version,
top-level and per topic or partition, so a client handles it exactly as it would the real one:

- **Produce** and **Fetch** do not reach the log: the answer is built from the request, every
  partition failing with the error (a produce with acks=0 gets no answer and is dropped, as a
  lost request would be).
- **Every other API** is served, and then every error code of its answer is replaced: the
  client sees the error although the request took effect, as when a real answer is lost
  (a retried CreateTopics then meets TOPIC_ALREADY_EXISTS, as it would against Kafka).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from kio.static.primitive import i32, i64

from strom.common import ErrorCode
from strom.protocol.api import ApiKey
from strom.server.api.handler_table import NO_RESPONSE, Handler, HandlerResult, RequestContext
from strom.server.api.kio_entities import build, response_module
from strom.server.api.throttle import NO_THROTTLE

__all__ = ["injected_error_response"]

_MESSAGE = "error injected by strom.testing"


async def injected_error_response(
    handler: Handler, context: RequestContext, code: ErrorCode
) -> HandlerResult:
    """The answer to ``context``'s request with ``code`` in every error field."""
    if context.api_key == ApiKey.PRODUCE:
        return _produce(context, code)
    if context.api_key == ApiKey.FETCH:
        return _fetch(context, code)
    result = await handler.handle(context)
    if result is NO_RESPONSE or not dataclasses.is_dataclass(result):
        return result
    answer: HandlerResult = _with_error(result, code)
    return answer


def _with_error(entity: Any, code: ErrorCode) -> Any:
    changes: dict[str, Any] = {}
    for field in dataclasses.fields(entity):
        value = getattr(entity, field.name)
        if field.name == "error_code":
            changes[field.name] = code
        elif field.name == "error_message" and code != ErrorCode.none:
            changes[field.name] = _MESSAGE
        elif isinstance(value, tuple) and value and dataclasses.is_dataclass(value[0]):
            changes[field.name] = tuple(_with_error(item, code) for item in value)
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            changes[field.name] = _with_error(value, code)
    return dataclasses.replace(entity, **changes)


def _produce(context: RequestContext, code: ErrorCode) -> HandlerResult:
    body: Any = context.body
    if int(body.acks) == 0:
        return NO_RESPONSE
    schema = response_module(ApiKey.PRODUCE, context.api_version)
    topics = tuple(
        build(
            schema.TopicProduceResponse,
            name=topic.name,
            partition_responses=tuple(
                build(
                    schema.PartitionProduceResponse,
                    index=i32(int(partition.index)),
                    error_code=code,
                    base_offset=i64(-1),
                    log_append_time=None,
                    log_start_offset=i64(-1),
                    record_errors=(),
                    error_message=_MESSAGE,
                )
                for partition in topic.partition_data
            ),
        )
        for topic in body.topic_data
    )
    response: HandlerResult = build(
        schema.ProduceResponse, responses=topics, throttle_time=NO_THROTTLE, node_endpoints=()
    )
    return response


def _fetch(context: RequestContext, code: ErrorCode) -> HandlerResult:
    body: Any = context.body
    schema = response_module(ApiKey.FETCH, context.api_version)
    topics = tuple(
        build(
            schema.FetchableTopicResponse,
            topic=getattr(topic, "topic", None),
            topic_id=getattr(topic, "topic_id", None),
            partitions=tuple(
                build(
                    schema.PartitionData,
                    partition_index=i32(int(partition.partition)),
                    error_code=code,
                    high_watermark=i64(-1),
                    last_stable_offset=i64(-1),
                    log_start_offset=i64(-1),
                    aborted_transactions=None,
                    preferred_read_replica=i32(-1),
                    records=None,
                )
                for partition in topic.partitions
            ),
        )
        for topic in body.topics
    )
    response: HandlerResult = build(
        schema.FetchResponse,
        throttle_time=NO_THROTTLE,
        error_code=ErrorCode.none,
        session_id=i32(0),
        responses=topics,
    )
    return response
