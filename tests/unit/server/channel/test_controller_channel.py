"""ControllerChannel tells its listeners when a connection to the controller is lost, sends the
broker's own requests again after a lost answer, and never a forwarded client request."""

from __future__ import annotations

import asyncio
import datetime

import pytest
from kio.schema.broker_heartbeat.v1.request import BrokerHeartbeatRequest
from kio.schema.delete_topics.v6.request import DeleteTopicsRequest, DeleteTopicState
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32Timedelta, i64

from strom.client.async_client import NodeClients
from strom.server.channel.controller_channel import ControllerChannel, ControllerUnavailable

HEARTBEAT = BrokerHeartbeatRequest(
    broker_id=BrokerId(1),
    broker_epoch=i64(1),
    current_metadata_offset=i64(0),
    want_fence=False,
    want_shut_down=False,
)


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
        async with server:
            with pytest.raises(ControllerUnavailable):
                await channel.send(HEARTBEAT, timeout=0.2)
        return len(lost)

    assert asyncio.run(scenario()) >= 1


def test_a_forwarded_request_that_went_out_unanswered_is_not_sent_again() -> None:
    """The controller reads each request and closes the connection before it answers (a
    connection that broke, or that another request's timeout dropped): the controller may have
    handled it. A heartbeat is sent again until the timeout; a forwarded client request goes
    once and fails at once (its client gets REQUEST_TIMED_OUT), since a DeleteTopics or
    CreateTopics sent again would meet its own effect (UNKNOWN_TOPIC_OR_PARTITION,
    TOPIC_ALREADY_EXISTS) and answer that to a client whose request succeeded."""

    async def requests_seen(forward: bool) -> int:
        seen: list[None] = []

        async def read_then_close(
            reader: asyncio.StreamReader, writer: asyncio.StreamWriter
        ) -> None:
            size = int.from_bytes(await reader.readexactly(4), "big")
            await reader.readexactly(size)
            seen.append(None)
            writer.close()

        server = await asyncio.start_server(read_then_close, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        clients = NodeClients(lambda _node: ("127.0.0.1", port))
        channel = ControllerChannel(
            node_id=1, leader=lambda: 1001, clients=clients, retry_backoff=0.01
        )
        delete = DeleteTopicsRequest(
            topics=(DeleteTopicState(name=TopicName("t"), topic_id=None),),
            timeout=i32Timedelta.parse(datetime.timedelta(seconds=1)),
        )
        async with server:
            with pytest.raises(ControllerUnavailable):
                if forward:
                    await channel.forward(delete, timeout=0.5)
                else:
                    await channel.send(HEARTBEAT, timeout=0.5)
        await clients.close()
        return len(seen)

    assert asyncio.run(requests_seen(forward=True)) == 1
    assert asyncio.run(requests_seen(forward=False)) > 1
