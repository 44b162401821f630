"""How a broker reaches the active controller (Kafka's ``NodeToControllerChannelManager``).

:meth:`ControllerChannel.send` sends one request to whichever node is the active controller now:
the quorum's leader as this node's Raft client knows it. When that is this very process (a
combined node), the controller's handler is called directly, without a connection; otherwise the
request goes over the controller listener (``strom.client.async_client``). A controller that
turns out not to be active (NOT_CONTROLLER), a connection that cannot be made or no known leader
make the channel wait ``retry_backoff`` and try again with whoever leads then, until ``timeout``;
then it raises :class:`ControllerUnavailable`.

A request that went out and got no answer (a timeout, or the connection broke meanwhile: a
request timing out on the same connection drops it too) may have been handled. The broker's own
requests (heartbeats, AlterPartition, ...) are safe to repeat and are sent again; a client's
request forwarded with :meth:`ControllerChannel.forward` is not (a topic creation sent again
meets the topic the first one made: TOPIC_ALREADY_EXISTS for a request that succeeded), so its
outcome is unknown and it raises :class:`ControllerUnavailable` at once, which the client gets as
REQUEST_TIMED_OUT, as Kafka's forwarding answers a request whose outcome it does not know.
Forwarded requests have connections of their own (Kafka's forwarding channel), so that a
heartbeat timing out on a slow controller does not break them.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from kio.schema.errors import ErrorCode
from kio.static.protocol import RequestPayload, ResponsePayload

from strom.client.async_client import NodeClients, RequestFailed
from strom.protocol.api import decode_response, encode_request, make_request_header
from strom.protocol.headers import RequestHeader
from strom.security.principal import KafkaPrincipal, serialize_principal

__all__ = [
    "ControllerChannel",
    "ControllerUnavailable",
    "EnvelopeRefused",
    "LocalController",
]

log = logging.getLogger(__name__)

LocalController = Callable[[RequestPayload], Awaitable[ResponsePayload]]
"""This process's controller, answering a request directly (None in a broker-only node)."""


class ControllerUnavailable(Exception):
    """No active controller answered within the timeout."""


class EnvelopeRefused(Exception):
    """The controller refused a forwarded request as a whole (its envelope's error code)."""

    def __init__(self, error_code: ErrorCode) -> None:
        super().__init__(f"the controller refused the forwarded request: {error_code.name}")
        self.error_code = error_code


class ControllerChannel:
    def __init__(
        self,
        *,
        node_id: int,
        leader: Callable[[], int | None],
        clients: NodeClients,
        local: LocalController | None = None,
        retry_backoff: float = 0.05,
    ) -> None:
        self._node_id = node_id
        self._leader = leader
        self._clients = clients
        self._forwarding = clients.sibling()
        """Clients' forwarded requests go over connections of their own, as over Kafka's
        forwarding channel: a heartbeat that times out on a slow controller drops its
        connection, and would take a forwarded request in flight with it."""
        self._local = local
        self._retry_backoff = retry_backoff
        self._connection_lost: list[Callable[[], None]] = []
        clients.when_dropped(self._dropped)

    def when_connection_lost(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` whenever a connection to a controller is lost: a request timed
        out, or the controller's end closed, also between requests. The broker then heartbeats
        at once, since the controller fences a broker whose heartbeat connection closed unless
        it hears from it within a short grace."""
        self._connection_lost.append(callback)

    def _dropped(self, _node_id: int) -> None:
        for callback in self._connection_lost:
            callback()

    async def send(self, body: RequestPayload, *, timeout: float) -> Any:
        """The active controller's answer to ``body`` (one whose top-level error code is not
        NOT_CONTROLLER), a request of this broker's that is safe to repeat. Raises
        :class:`ControllerUnavailable` after ``timeout`` seconds."""
        return await self._send(body, timeout=timeout, clients=self._clients, repeatable=True)

    async def _send(
        self, body: RequestPayload, *, timeout: float, clients: NodeClients, repeatable: bool
    ) -> Any:
        """:meth:`send` over ``clients``; one that is not ``repeatable`` raises
        :class:`ControllerUnavailable` at once when it went out without an answer."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        reason = "no controller is known yet"
        while True:
            leader = self._leader()
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise ControllerUnavailable(
                    f"no active controller answered within {timeout:g} s ({reason})"
                )
            if leader is not None:
                try:
                    response = await self._send_to(leader, body, remaining, clients)
                except RequestFailed as error:
                    if error.sent and not repeatable:
                        raise ControllerUnavailable(
                            f"no answer from the active controller {leader}, which may have "
                            f"handled the request ({error})"
                        ) from None
                    reason = str(error)
                else:
                    if getattr(response, "error_code", None) != ErrorCode.not_controller:
                        return response
                    reason = f"node {leader} is not the active controller"
            await asyncio.sleep(min(self._retry_backoff, max(deadline - loop.time(), 0)))

    async def forward(
        self,
        body: RequestPayload,
        *,
        header: RequestHeader | None = None,
        client_address: str = "",
        principal: KafkaPrincipal | None = None,
        timeout: float,
    ) -> Any:
        """``body`` (with the client's ``header``, or one of this broker's) inside an Envelope
        to the active controller; the answer's body. Raises :class:`ControllerUnavailable`
        (also when it went out without an answer: it is not sent twice) or
        :class:`EnvelopeRefused`."""
        if header is None:
            header = make_request_header(
                body, correlation_id=0, client_id=f"strom-broker-{self._node_id}"
            )
        from kio.schema.envelope.v0.request import EnvelopeRequest  # noqa: PLC0415 - first use

        envelope = EnvelopeRequest(
            request_data=encode_request(header=header, body=body),
            request_principal=None if principal is None else serialize_principal(principal),
            client_host_address=_packed_host(client_address),
        )
        answer = await self._send(
            envelope, timeout=timeout, clients=self._forwarding, repeatable=False
        )
        if answer.error_code != ErrorCode.none or answer.response_data is None:
            raise EnvelopeRefused(ErrorCode(answer.error_code))
        _, response = decode_response(
            answer.response_data, api_key=body.__api_key__, api_version=body.__version__
        )
        return response

    async def _send_to(
        self, leader: int, body: RequestPayload, timeout: float, clients: NodeClients
    ) -> Any:
        if leader == self._node_id and self._local is not None:
            try:
                async with asyncio.timeout(timeout):
                    return await self._local(body)
            except TimeoutError:
                unanswered = "this node's controller did not answer in time"
                raise RequestFailed(unanswered, sent=True) from None
        return await clients.request(leader, body, timeout=timeout)


def _packed_host(address: str) -> bytes:
    """``host:port`` as an envelope's 4- or 16-byte client address (empty when not an IP)."""
    host = address.rsplit(":", 1)[0].strip("[]")
    try:
        return ipaddress.ip_address(host).packed
    except ValueError:
        return b""
