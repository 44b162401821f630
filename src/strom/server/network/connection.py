"""One client connection: frames in, handlers run concurrently, responses out in request order.

Reading: bytes go through a ``FrameDecoder``, received into its memory (a buffered protocol:
a large produce request lands straight in one buffer of its size, not in chunks copied again);
each frame is decoded (``decode_request``) and its handler starts at once as a task, so a
client may pipeline requests and a slow handler (a long poll fetch) delays only this
connection's later responses, never other connections.

Writing: a single writer task takes the in-flight requests in arrival order, waits for each
handler's result and writes it (``FrameWriter``). Kafka clients match responses to requests by
order as well as by correlation id, so this order is part of the protocol.

Handlers start in request order, but run concurrently: a handler whose effect must be ordered
after the previous request's (appends from one producer) must make that change before its first
``await``, or order it itself.

Bad input (a frame size out of range, an unknown API key, an unsupported version, a body that does
not decode) closes the connection with a log line naming the problem and the client, as Kafka
does; the broker goes on serving everyone else. An unsupported ApiVersions version is not bad
input: it is answered (see ``strom.protocol.api``). A handler that raises closes the connection
too (the client reconnects and retries), with the traceback in the log.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, cast

from strom.protocol.api import (
    ApiKey,
    InvalidRequestError,
    Request,
    decode_request,
    encode_response,
)
from strom.protocol.framing import BytesLike, FrameDecoder, InvalidFrameSizeError
from strom.security.principal import ANONYMOUS, KafkaPrincipal, ssl_principal
from strom.security.principal_mapping import NoMatchingRule, PrincipalMapper
from strom.server.api.handler_table import (
    NO_RESPONSE,
    CloseConnection,
    Handler,
    HandlerResult,
    HandlerTable,
    RequestContext,
)
from strom.server.api.response import Response
from strom.server.metrics import NodeMetrics, request_name
from strom.server.network.faults import Faults
from strom.server.network.injected_errors import injected_error_response
from strom.server.network.request_time import CLUSTER_ACTIONS, RequestTime, request_time
from strom.server.network.writer import FrameWriter
from strom.server.quotas.client_quotas import ClientQuotas

__all__ = ["Connection", "ConnectionSettings", "format_address"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ConnectionSettings:
    max_request_size: int
    """``socket.request.max.bytes``: larger frames close the connection."""
    max_in_flight: int = 64
    """Requests read but not yet answered before the connection stops reading."""
    use_sendfile: bool = True
    failed_authentication_delay_ms: int = 100
    """``connection.failed.authentication.delay.ms``: a failed login is answered and closed
    this much later."""
    metrics: NodeMetrics | None = None
    """The node's counters: each request's API, version and total time (None: not counted)."""


@dataclass(slots=True)
class _InFlight:
    context: RequestContext
    task: asyncio.Task[Response | None]
    started_ns: int
    """When the request was read (``time.perf_counter_ns``)."""


class Connection(asyncio.BufferedProtocol):
    """The asyncio protocol of one accepted connection."""

    def __init__(
        self,
        *,
        registry: HandlerTable,
        settings: ConnectionSettings,
        index: int,
        on_started: Callable[[Connection], None],
        on_finished: Callable[[Connection], None],
        faults: Faults | None = None,
        listener_name: str = "PLAINTEXT",
        principal_mapper: PrincipalMapper | None = None,
        quotas: ClientQuotas | None = None,
        request_exempt: frozenset[ApiKey] = CLUSTER_ACTIONS,
    ) -> None:
        """``principal_mapper``: an SSL listener's, naming clients by their certificate;
        ``quotas``: the node's client quotas, producers' byte rates counted as each Produce is
        read and every request's handling time (but ``request_exempt``'s, from a principal
        allowed CLUSTER_ACTION) under ``request_percentage``."""
        self._registry = registry
        self._quotas = quotas
        self._request_exempt = request_exempt
        self._principal_mapper = principal_mapper
        self.principal: KafkaPrincipal = ANONYMOUS
        self._listener_name = listener_name
        self._faults = faults
        self._settings = settings
        self._index = index
        self._on_finished = on_finished
        self._on_started = on_started
        self._decoder = FrameDecoder(max_frame_size=settings.max_request_size)
        self._in_flight: deque[_InFlight] = deque()
        self._work: asyncio.Future[None] | None = None
        self._input_closed = False
        self._broken = False
        self._reading_paused = False
        self._unmute: asyncio.TimerHandle | None = None
        """Set while the connection is muted for a quota's throttle time."""
        self._held: deque[BytesLike] = deque()
        """Frames read while muted, served once the mute ends (Kafka reads none meanwhile)."""
        self._transport: asyncio.Transport | None = None
        self._when_closed: list[Callable[[], None]] | None = []
        """Called once the connection has closed (None: it has)."""
        self._writer: FrameWriter | None = None
        self._write_task: asyncio.Task[None] | None = None
        self.client_address = "unknown"
        self.client_host = "unknown"
        self.connection_id = f"unknown-{index}"
        self.last_active = time.monotonic()
        """When the client last sent something (the least recently active connection is the
        one closed when an inter-broker connection takes the broker over its limit)."""

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)
        local = format_address(transport.get_extra_info("sockname"))
        peer = transport.get_extra_info("peername")
        self.client_address = format_address(peer)
        self.client_host = str(peer[0]) if isinstance(peer, tuple) else str(peer)
        self.connection_id = f"{local}-{self.client_address}-{self._index}"
        self._writer = FrameWriter(self._transport, use_sendfile=self._settings.use_sendfile)
        self._write_task = asyncio.get_running_loop().create_task(
            self._write_loop(), name=f"strom-connection-{self.connection_id}"
        )
        log.debug("accepted connection %s", self.connection_id)
        self._on_started(self)
        if self._principal_mapper is not None:
            self._take_certificate_principal()

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._decoder.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        self._received(self._decoder.buffer_updated, nbytes)

    def data_received(self, data: bytes) -> None:
        """Bytes handed over rather than received into :meth:`get_buffer` (tests, wrappers)."""
        self._received(self._decoder.feed, data)

    def _received(self, decode: Callable[[Any], list[BytesLike]], data: Any) -> None:
        if self._input_closed:
            return
        self.last_active = time.monotonic()
        try:
            frames = decode(data)
        except InvalidFrameSizeError as error:
            self._fail(str(error))
            return
        for frame in frames:
            if self._unmute is not None:
                self._held.append(frame)
            elif not self._dispatch(frame):
                return
        self._apply_backpressure()

    def eof_received(self) -> bool:
        if not self._decoder.at_frame_boundary:
            log.warning(
                "connection from %s ended in the middle of a frame (%d bytes of it received)",
                self.client_address,
                self._decoder.buffered,
            )
        self._close_input()
        # keep writing the answers still due (the write loop closes the transport); TLS has no
        # half-closed state, so there the transport closes now
        return self._transport is not None and self._transport.get_extra_info("sslcontext") is None

    def connection_lost(self, exc: Exception | None) -> None:
        self._broken = True
        self._close_input()
        if self._writer is not None:
            self._writer.connection_lost()
        log.debug("connection %s lost: %s", self.connection_id, exc or "closed")

    def pause_writing(self) -> None:
        if self._writer is not None:
            self._writer.pause_writing()

    def resume_writing(self) -> None:
        if self._writer is not None:
            self._writer.resume_writing()

    def _take_certificate_principal(self) -> None:
        """The TLS client's principal from its certificate; closes the connection when the
        mapping rules name no one."""
        assert self._transport is not None and self._principal_mapper is not None
        ssl_object = self._transport.get_extra_info("ssl_object")
        certificate = None if ssl_object is None else ssl_object.getpeercert(binary_form=True)
        try:
            self.principal = ssl_principal(certificate, self._principal_mapper)
        except NoMatchingRule as error:
            self._fail(str(error))

    # control from the listener

    @property
    def in_flight(self) -> int:
        return len(self._in_flight)

    async def wait_finished(self) -> None:
        """Until every request read has been answered (or dropped) and the socket is closed."""
        if self._write_task is not None:
            await asyncio.shield(self._write_task)

    def shutdown(self) -> None:
        """Stop reading; answer the requests already read, then close."""
        self._close_input()

    def abort(self) -> None:
        """Close at once, cancelling the handlers still running."""
        self._broken = True
        self._close_input()
        for in_flight in self._in_flight:
            in_flight.task.cancel()
        if self._transport is not None:
            self._transport.abort()

    # internals

    def _dispatch(self, frame: BytesLike) -> bool:
        """Start handling one frame; False when it was bad input and the connection is closing."""
        request = self._decode(frame)
        return request is not None and self._serve(request)

    def _serve(self, request: Request) -> bool:
        """Start the request's handler."""
        handler = self._registry.get(request.api_key)
        assert handler is not None, request  # decode_request only accepts registered keys
        context = self._context(request)
        quotas = self._quotas
        timer = None
        if quotas is not None:
            produce = quotas.produce
            if produce.enabled and request.api_key == ApiKey.PRODUCE:
                # counted as it is read, so that the frames after it wait out its throttle
                throttle_ms = produce.record(context.user, context.client_id, request.size)
                if throttle_ms:
                    context = dataclasses.replace(context, throttle_ms=throttle_ms)
                    self.mute(throttle_ms)
            timer = self._counted(quotas, context) if quotas.request.enabled else None
            if timer is not None:
                context = timer.context
        self._start(self._handle(handler, context, timer), context)
        return True

    def _counted(self, quotas: ClientQuotas, context: RequestContext) -> RequestTime | None:
        """The request's time under the request quota (None: not counted)."""
        return request_time(quotas.request, context, self._request_exempt)

    def _decode(self, frame: BytesLike) -> Request | None:
        """The frame's request, or None after closing the connection on bad input."""
        try:
            return decode_request(frame, versions=self._registry.versions)
        except InvalidRequestError as error:
            reason = str(error)
            if error.correlation_id is not None:
                reason += f" (correlation id {error.correlation_id})"
            self._fail(reason)
            return None

    def _context(self, request: Request) -> RequestContext:
        return RequestContext(
            request=request,
            client_address=self.client_address,
            connection_id=self.connection_id,
            listener_name=self._listener_name,
            principal=self.principal,
            authorizer=self._registry.authorizer,
            throttle=self.mute,
            when_closed=self.when_closed,
        )

    def _start(self, work: Coroutine[Any, Any, Response | None], context: RequestContext) -> None:
        """Queue the answer to one request behind the earlier ones."""
        task = asyncio.get_running_loop().create_task(work)
        self._in_flight.append(_InFlight(context, task, time.perf_counter_ns()))
        _wake(self._work)

    async def _handle(
        self, handler: Handler, context: RequestContext, timer: RequestTime | None
    ) -> Response | None:
        faults = self._faults
        if faults is not None and faults.active:
            work = _with_faults(faults, handler, context)
        else:
            work = handler.handle(context)
        result = await (work if timer is None else timer.serve(work))
        if result is NO_RESPONSE:
            return None
        if isinstance(result, Response):
            return result
        body: Any = result
        request = context.request
        expected_version = 0 if request.unsupported_version else request.api_version
        if body.__api_key__ != request.api_key or body.__version__ != expected_version:
            raise TypeError(
                f"handler for {request} answered with {type(body).__name__} "
                f"v{body.__version__} (API key {body.__api_key__})"
            )
        return Response.of(encode_response(correlation_id=request.correlation_id, body=result))

    async def _write_loop(self) -> None:
        assert self._writer is not None and self._transport is not None
        try:
            while self._in_flight or not self._input_closed:
                if not self._in_flight:
                    await self._wait_for_work()
                    continue
                in_flight = self._in_flight[0]
                try:
                    # shielded: cancelling this loop must not cancel a handler mid-way
                    response = await asyncio.shield(in_flight.task)
                except asyncio.CancelledError:
                    if not in_flight.task.cancelled():
                        raise  # this loop is being cancelled, not the handler (abort)
                    response = None
                except Exception as error:
                    if isinstance(error, CloseConnection):
                        log.info("closing connection from %s: %s", self.client_address, error)
                    else:
                        log.exception(
                            "closing connection from %s: handling %s failed",
                            self.client_address,
                            in_flight.context.request,
                        )
                    response = None
                    self._broken = True
                    self._close_input()
                    self._transport.close()
                self._in_flight.popleft()
                metrics = self._settings.metrics
                if metrics is not None:
                    request = in_flight.context.request
                    metrics.answered(
                        request_name(request.api_key),
                        request.api_version,
                        (time.perf_counter_ns() - in_flight.started_ns) / 1e6,
                    )
                self._apply_backpressure()
                if response is None:
                    continue
                if self._broken:
                    response.close()
                    continue
                try:
                    await self._writer.write(response)
                except (OSError, EOFError) as error:
                    if not self._transport.is_closing():
                        log.warning(
                            "closing connection from %s: writing the answer to %s failed: %s",
                            self.client_address,
                            in_flight.context.request,
                            error,
                        )
                    self._broken = True
                    self._transport.close()
                except Exception:
                    log.exception(
                        "closing connection from %s: writing the answer to %s failed",
                        self.client_address,
                        in_flight.context.request,
                    )
                    self._broken = True
                    self._transport.close()
                finally:
                    response.close()
        finally:
            self._transport.close()
            self._on_finished(self)
            callbacks, self._when_closed = self._when_closed or [], None
            for callback in callbacks:
                callback()

    def when_closed(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once the connection has closed (at once if it has)."""
        if self._when_closed is None:
            callback()
        else:
            self._when_closed.append(callback)

    async def _wait_for_work(self) -> None:
        waiter = asyncio.get_running_loop().create_future()
        self._work = waiter
        try:
            await waiter
        finally:
            self._work = None

    def mute(self, throttle_ms: int) -> None:
        """Read nothing more from the client for ``throttle_ms`` (KIP-219: its answer carries
        the throttle time and it is answered at once; a longer mute wins)."""
        if throttle_ms <= 0 or self._input_closed:
            return
        loop = asyncio.get_running_loop()
        until = loop.time() + throttle_ms / 1000
        if self._unmute is not None:
            if self._unmute.when() >= until:
                return
            self._unmute.cancel()
        self._unmute = loop.call_at(until, self._end_mute)
        self._apply_backpressure()

    def _end_mute(self) -> None:
        self._unmute = None
        while self._held and self._unmute is None and not self._input_closed:
            if not self._dispatch(self._held.popleft()):
                return
        self._apply_backpressure()

    def _fail(self, reason: str) -> None:
        log.warning("closing connection from %s: %s", self.client_address, reason)
        self._close_now()

    def _close_now(self) -> None:
        self._broken = True
        self._close_input()
        if self._transport is not None:
            self._transport.close()

    def _close_input(self) -> None:
        if self._input_closed:
            return
        self._input_closed = True
        if self._unmute is not None:
            self._unmute.cancel()
            self._unmute = None
        if self._transport is not None and not self._transport.is_closing():
            self._transport.pause_reading()
        _wake(self._work)

    def _apply_backpressure(self) -> None:
        if self._input_closed or self._transport is None:
            return
        pause = len(self._in_flight) >= self._settings.max_in_flight or self._unmute is not None
        if pause and not self._reading_paused:
            self._transport.pause_reading()
            self._reading_paused = True
        elif not pause and self._reading_paused:
            self._transport.resume_reading()
            self._reading_paused = False


async def _with_faults(faults: Faults, handler: Handler, context: RequestContext) -> HandlerResult:
    """Serve a request under the injected faults: an error instead of the answer, a delay
    before it is sent, the answer lost with the connection."""
    api_key = context.api_key
    link_delay, lost = faults.link_fault(api_key, context.client_id)
    code = faults.take_error(api_key)
    if code is None:
        result = await handler.handle(context)
    else:
        log.info(
            "answering %s from %s with injected %s",
            context.request,
            context.client_address,
            code.name.upper(),
        )
        result = await injected_error_response(handler, context, code)
    delay = faults.delay_for(api_key) + link_delay
    if delay > 0:
        await asyncio.sleep(delay)
    if lost:
        raise CloseConnection(f"injected loss of the answer to {context.request}")
    return result


def _wake(waiter: asyncio.Future[None] | None) -> None:
    if waiter is not None and not waiter.done():
        waiter.set_result(None)


def format_address(address: object) -> str:
    """``host:port`` (``[v6]:port``) of a socket address as asyncio reports it."""
    if isinstance(address, tuple) and len(address) >= 2:
        host, port = address[0], address[1]
        return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"
    return str(address)
