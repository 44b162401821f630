"""ControllerChannel tells its listeners when a connection to the controller is lost."""

from __future__ import annotations

import asyncio

import pytest
from kio.schema.broker_heartbeat.v1.request import BrokerHeartbeatRequest
from kio.schema.types import BrokerId
from kio.static.primitive import i64

from strom.client.async_client import NodeClients
from strom.server.channel.controller_channel import ControllerChannel, ControllerUnavailable


def test_a_connection_the_controller_closes_is_reported() -> None:
    """The controller's end closes every connection it accepts: each loss is reported (the
    broker then heartbeats at once), and the request gives up after its timeout."""

    async def scenario() -> int:
        async def close_at_once(
            _reader: asyncio.StreamReader, writer: asyncio.StreamWriter
        ) -> None:
            writer.close()

        server = await asyncio.start_server(close_at_once, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        lost: list[None] = []
        channel = ControllerChannel(
            node_id=1,
            leader=lambda: 1001,
            clients=NodeClients(lambda _node: ("127.0.0.1", port)),
            retry_backoff=0.01,
        )
        channel.when_connection_lost(lambda: lost.append(None))
        request = BrokerHeartbeatRequest(
            broker_id=BrokerId(1),
            broker_epoch=i64(1),
            current_metadata_offset=i64(0),
            want_fence=False,
            want_shut_down=False,
        )
        async with server:
            with pytest.raises(ControllerUnavailable):
                await channel.send(request, timeout=0.2)
        return len(lost)

    assert asyncio.run(scenario()) >= 1
