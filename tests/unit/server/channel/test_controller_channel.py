"""ControllerChannel tells its listeners when a request to the controller got no answer."""

from __future__ import annotations

import asyncio

import pytest
from kio.schema.broker_heartbeat.v1.request import BrokerHeartbeatRequest
from kio.schema.types import BrokerId
from kio.static.primitive import i64

from strom.client.async_client import NodeClients
from strom.server.channel.controller_channel import ControllerChannel, ControllerUnavailable


def test_a_request_without_an_answer_is_reported() -> None:
    async def scenario() -> int:
        failures: list[None] = []
        channel = ControllerChannel(
            node_id=1,
            leader=lambda: 1001,
            clients=NodeClients(lambda _node: None),  # nowhere to connect
            retry_backoff=0.01,
        )
        channel.when_request_failed(lambda: failures.append(None))
        request = BrokerHeartbeatRequest(
            broker_id=BrokerId(1),
            broker_epoch=i64(1),
            current_metadata_offset=i64(0),
            want_fence=False,
            want_shut_down=False,
        )
        with pytest.raises(ControllerUnavailable):
            await channel.send(request, timeout=0.1)
        return len(failures)

    assert asyncio.run(scenario()) >= 1
