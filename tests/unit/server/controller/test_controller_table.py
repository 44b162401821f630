"""The controller's handler table on a controller that is not active: the APIs that answer
NOT_CONTROLLER themselves (broker registration and heartbeats, producer id blocks, SCRAM
credentials, client quotas, ACLs) do so in their own answer, through the table's one wrapper;
the others let NotControllerError reach the Envelope, which answers NOT_CONTROLLER on the
envelope for the broker to retry with the new active controller."""

from __future__ import annotations

import asyncio
import datetime
import random
from collections.abc import Sequence
from typing import Any

import pytest
from kio.schema.allocate_producer_ids.v0 import request as allocate
from kio.schema.broker_heartbeat.v1 import request as heartbeat
from kio.schema.create_topics.v7 import request as create_topics
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i16, i32, i32Timedelta, i64

from strom.common import ErrorCode
from strom.common.clock import SystemClock
from strom.config import ServerConfig
from strom.controller import ControllerSettings, QuorumController
from strom.metadata import MetadataLoader
from strom.protocol.api import (
    KAFKA_CONTROLLER_VERSIONS,
    ApiKey,
    decode_request,
    encode_request,
    make_request_header,
)
from strom.server.api.handler_table import Handler, HandlerTable, RequestContext
from strom.server.configs.config_entries import ConfigDescriber
from strom.server.configs.log_configs import TopicConfigResolver
from strom.server.controller.controller_server import ControllerServer, NotControllerError
from strom.server.controller.handlers.admin_table import admin_handlers
from strom.server.controller.handlers.controller_table import controller_handlers
from strom.server.controller.handlers.envelope import EnvelopeHandler
from strom.server.quotas.client_quotas import ClientQuotas


class NoQuorum:
    def append(self, records: Sequence[bytes], *, epoch: int) -> int:
        raise AssertionError("an inactive controller appends nothing")


def table() -> dict[ApiKey, Handler]:
    """The handlers of a controller that is not active."""
    config = ServerConfig({"process.roles": "controller", "node.id": "1"})
    loader = MetadataLoader()
    controller = ControllerServer(
        QuorumController(ControllerSettings(), random=random.Random(1)),
        node_id=1,
        quorum=NoQuorum(),
        committed=loader,
        clock=SystemClock(),
        session_timeout_ms=9000,
    )
    quotas = ClientQuotas.from_config(config, SystemClock())
    registry = HandlerTable(reference=KAFKA_CONTROLLER_VERSIONS)
    handlers = controller_handlers(
        controller,
        registry=registry,
        cluster_id="MkU3OEVBNTcwNTJENDM2Qg",
        request_quota=quotas.request,
        request_exempt=frozenset(),
    ) + admin_handlers(
        controller,
        describer=ConfigDescriber(TopicConfigResolver(config, node_id=1)),
        mutations=quotas.controller_mutation,
        image=lambda: loader.image,
    )
    for handler in handlers:
        registry.register(handler)
    return {handler.api_key: handler for handler in handlers}


def serve(handler: Handler, body: Any) -> Any:
    header = make_request_header(body, correlation_id=1, client_id="test")
    request = decode_request(
        encode_request(header=header, body=body), versions=KAFKA_CONTROLLER_VERSIONS
    )
    context = RequestContext(request=request, client_address="test:1", connection_id="c")
    return asyncio.run(handler.handle(context))


def test_an_inactive_controller_answers_not_controller_in_the_apis_own_answer() -> None:
    handlers = table()
    answer = serve(
        handlers[ApiKey.ALLOCATE_PRODUCER_IDS],
        allocate.AllocateProducerIdsRequest(broker_id=BrokerId(2), broker_epoch=i64(5)),
    )
    assert answer.error_code == ErrorCode.not_controller
    assert int(answer.producer_id_len) == 0
    answer = serve(
        handlers[ApiKey.BROKER_HEARTBEAT],
        heartbeat.BrokerHeartbeatRequest(
            broker_id=BrokerId(2),
            broker_epoch=i64(5),
            current_metadata_offset=i64(0),
            want_fence=False,
            want_shut_down=False,
        ),
    )
    assert answer.error_code == ErrorCode.not_controller
    assert answer.should_shut_down is False


def test_the_other_apis_leave_not_controller_to_the_envelope() -> None:
    handlers = table()
    assert isinstance(handlers[ApiKey.ENVELOPE], EnvelopeHandler)
    body = create_topics.CreateTopicsRequest(
        topics=(
            create_topics.CreatableTopic(
                name=TopicName("t"),
                num_partitions=i32(1),
                replication_factor=i16(1),
                assignments=(),
                configs=(),
            ),
        ),
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=1)),
        validate_only=False,
    )
    with pytest.raises(NotControllerError):
        serve(handlers[ApiKey.CREATE_TOPICS], body)
