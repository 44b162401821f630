"""ControllerChannel tells its listeners when a connection to the controller is lost, sends the
broker's own requests again after a lost answer, and never a forwarded client request, which
goes over connections of its own."""

from __future__ import annotations

import asyncio
import datetime

import pytest
from kio.schema.broker_heartbeat.v1.request import BrokerHeartbeatRequest
from kio.schema.delete_topics.v6.request import DeleteTopicsRequest, DeleteTopicState
from kio.schema.envelope.v0.response import EnvelopeResponse
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32Timedelta, i64

from strom.client.async_client import NodeClients
from strom.common import ErrorCode
from strom.protocol.api import KAFKA_CONTROLLER_VERSIONS, ApiKey, decode_request, encode_response
from strom.protocol.framing import frame_prefix
from strom.server.channel.controller_channel import (
    ControllerChannel,
    ControllerUnavailable,
    EnvelopeRefused,
)

HEARTBEAT = BrokerHeartbeatRequest(
    broker_id=BrokerId(1),
    broker_epoch=i64(1),
    current_metadata_offset=i64(0),
    want_fence=False,
    want_shut_down=False,
)

DELETE = DeleteTopicsRequest(
    topics=(DeleteTopicState(name=TopicName("t"), topic_id=None),),
    timeout=i32Timedelta.parse(datetime.timedelta(seconds=1)),
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
        async with server:
            with pytest.raises(ControllerUnavailable):
                if forward:
                    await channel.forward(DELETE, timeout=0.5)
                else:
                    await channel.send(HEARTBEAT, timeout=0.5)
        await clients.close()
        return len(seen)

    assert asyncio.run(requests_seen(forward=True)) == 1
    assert asyncio.run(requests_seen(forward=False)) > 1


def test_a_heartbeat_that_times_out_breaks_no_forwarded_request() -> None:
    """A slow controller: a forwarded request waits for its answer while a heartbeat times out,
    which drops the heartbeat's connection (a pipelined connection cannot skip an answer). The
    forwarded request has connections of its own (Kafka's forwarding channel) and gets the
    answer the controller sends once done (here an envelope error, EnvelopeRefused) instead of
    failing with the heartbeat's connection."""

    async def scenario() -> BaseException:
        heartbeat_failed = asyncio.Event()

        async def slow_controller(
            reader: asyncio.StreamReader, writer: asyncio.StreamWriter
        ) -> None:
            while True:
                try:
                    frame = await reader.readexactly(
                        int.from_bytes(await reader.readexactly(4), "big")
                    )
                except asyncio.IncompleteReadError:
                    return
                request = decode_request(frame, versions=KAFKA_CONTROLLER_VERSIONS)
                if request.api_key != ApiKey.ENVELOPE:
                    continue  # a heartbeat: never answered
                await heartbeat_failed.wait()
                answer = encode_response(
                    correlation_id=request.correlation_id,
                    body=EnvelopeResponse(
                        response_data=None, error_code=ErrorCode.cluster_authorization_failed
                    ),
                )
                writer.write(frame_prefix(len(answer)) + answer)

        server = await asyncio.start_server(slow_controller, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        channel = ControllerChannel(
            node_id=1,
            leader=lambda: 1001,
            clients=NodeClients(lambda _node: ("127.0.0.1", port)),
            retry_backoff=0.01,
        )
        async with server:
            forwarded = asyncio.ensure_future(channel.forward(DELETE, timeout=5.0))
            await asyncio.sleep(0.05)
            with pytest.raises(ControllerUnavailable):
                await channel.send(HEARTBEAT, timeout=0.2)
            heartbeat_failed.set()
            outcome = (await asyncio.gather(forwarded, return_exceptions=True))[0]
        assert isinstance(outcome, BaseException)
        return outcome

    outcome = asyncio.run(scenario())
    assert isinstance(outcome, EnvelopeRefused), outcome
    assert outcome.error_code == ErrorCode.cluster_authorization_failed
