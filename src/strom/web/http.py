"""The HTTP plumbing every service shares: JSON responses and ``{"error_code", "message"}``
errors in the service's content type, HTTP basic authentication (401 and 403 as Confluent's and
Kafka Connect's), the request body limit and the request log, and the Starlette app around a
service's routes."""

from __future__ import annotations

import base64
import binascii
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from strom.web.security import ListenerSecurity, User

if TYPE_CHECKING:
    import httpx

__all__ = [
    "AuthAndLimits",
    "BasicAuth",
    "ErrorBody",
    "ErrorHandler",
    "confluent_error",
    "create_app",
    "forward",
    "json_response",
    "relayed",
]

ErrorHandler = Callable[[Request, Exception], Awaitable[Response]]
ErrorBody = Callable[[int, str], object]
"""A service's error body for an HTTP status and a message."""


def confluent_error(status: int, message: str) -> object:
    """The error body of Confluent's services and Kafka Connect: ``{"error_code", "message"}``."""
    return {"error_code": status, "message": message}


def json_response(
    body: object, status: int = 200, *, media_type: str = "application/json"
) -> Response:
    """``body`` as compact JSON (non-ASCII kept as is)."""
    return Response(
        json.dumps(body, separators=(",", ":"), ensure_ascii=False), status, media_type=media_type
    )


def error_response(
    status: int,
    message: str,
    *,
    media_type: str = "application/json",
    headers: Mapping[str, str] | None = None,
    body: ErrorBody = confluent_error,
) -> Response:
    """An error response: ``body`` of the status and message (Confluent's by default)."""
    response = json_response(body(status, message), status, media_type=media_type)
    response.headers.update(headers or {})
    return response


FORWARDED_HEADERS = ("content-type", "authorization", "accept")
"""What a request sent on to another node of the service keeps of its headers."""


async def forward(
    client: httpx.AsyncClient,
    request: Request,
    base_url: str,
    *,
    params: Any,
    headers: Mapping[str, str] | None = None,
) -> httpx.Response:
    """``request`` sent on to the same path at ``base_url`` (a registry's primary, a Connect
    group's leader): its method, body, content type, credentials and accepted types, with
    ``params`` as its query and ``headers`` added. The caller maps failures to its errors."""
    kept = {name: v for name, v in request.headers.items() if name.lower() in FORWARDED_HEADERS}
    return await client.request(
        request.method,
        base_url.rstrip("/") + request.url.path,
        params=params,
        content=await request.body(),
        headers={**kept, **(headers or {})},
    )


def relayed(answer: httpx.Response) -> Response:
    """A forwarded request's answer, as this node's."""
    return Response(
        answer.content, answer.status_code, media_type=answer.headers.get("content-type")
    )


@dataclass(frozen=True)
class BasicAuth:
    """HTTP basic authentication as Confluent's ``authentication.method=BASIC`` and Kafka
    Connect's ``BasicAuthSecurityRestExtension``: users from the JAAS realm's password file, and
    the roles (``*`` is any user) a user needs one of. ``plain_refusal``: Kafka Connect's 401,
    this plain text without a challenge (else the JSON error and ``WWW-Authenticate``)."""

    realm: str
    users: Mapping[str, User]
    roles: frozenset[str] = frozenset({"*"})
    plain_refusal: str | None = None

    @classmethod
    def of(cls, security: ListenerSecurity) -> BasicAuth | None:
        """The listener's basic authentication, if its settings ask for it."""
        users = security.users()
        return cls(security.realm, users, security.roles) if users is not None else None

    def refusal(self, header: str | None) -> int | None:
        """401 for missing or wrong credentials, 403 for a user without a role, else None."""
        if header is None or not header.lower().startswith("basic "):
            return 401
        try:
            name, _, password = base64.b64decode(header[6:], validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return 401
        user = self.users.get(name)
        if user is None or not user.accepts(password):
            return 401
        if self.roles & {"*", "**"} or self.roles & user.roles:
            return None
        return 403


class AuthAndLimits:
    """ASGI middleware: authenticates (all but the ``open_paths``), refuses bodies over the
    limit with 413, and logs every request with its status and time to ``log``."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        auth: BasicAuth | None,
        max_body_bytes: int | None,
        media_type: str,
        log: logging.Logger,
        open_paths: frozenset[str] = frozenset(),
        error_body: ErrorBody = confluent_error,
    ) -> None:
        self.app = app
        self.error_body = error_body
        self.auth = auth
        self.max_body_bytes = max_body_bytes
        self.media_type = media_type
        self.log = log
        self.open_paths = open_paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.monotonic()
        status = [0]

        async def logged_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        try:
            refusal = (
                self.auth.refusal(headers.get("authorization"))
                if self.auth is not None and scope["path"] not in self.open_paths
                else None
            )
            error: Response | None = None
            if refusal == 401 and self.auth is not None and self.auth.plain_refusal is not None:
                error = Response(self.auth.plain_refusal, 401, media_type="text/plain")
            elif refusal == 401:
                assert self.auth is not None
                realm = {"WWW-Authenticate": f'Basic realm="{self.auth.realm}"'}
                error = self._error(401, "Unauthorized", realm)
            elif refusal == 403:
                error = self._error(403, "Forbidden")
            elif self.max_body_bytes is not None and (
                int(headers.get("content-length") or 0) > self.max_body_bytes
            ):
                error = self._error(413, "HTTP 413 Payload Too Large")
            if error is not None:
                await error(scope, receive, logged_send)
            elif self.max_body_bytes is None:
                await self.app(scope, receive, logged_send)
            else:
                await self.app(scope, self._limited(receive, self.max_body_bytes), logged_send)
        finally:
            self.log.info(
                "%s %s %s %d %.1fms",
                scope.get("client", ("-",))[0],
                scope["method"],
                scope["path"]
                + (f"?{scope['query_string'].decode()}" if scope["query_string"] else ""),
                status[0],
                (time.monotonic() - started) * 1000,
            )

    def _error(
        self, status: int, message: str, headers: Mapping[str, str] | None = None
    ) -> Response:
        return error_response(
            status, message, media_type=self.media_type, headers=headers, body=self.error_body
        )

    @staticmethod
    def _limited(receive: Receive, limit: int) -> Receive:
        """Count a body sent without a length; past the limit the app sees a disconnect."""
        seen = [0]

        async def limited() -> Message:
            message = await receive()
            seen[0] += len(message.get("body", b""))
            if seen[0] > limit:
                return {"type": "http.disconnect"}
            return message

        return limited


def create_app(
    routes: Sequence[BaseRoute],
    *,
    errors: Mapping[type[Exception], ErrorHandler],
    auth: BasicAuth | None = None,
    max_body_bytes: int | None = 16 << 20,
    media_type: str = "application/json",
    log: logging.Logger,
    open_paths: frozenset[str] = frozenset(),
    error_body: ErrorBody = confluent_error,
) -> Starlette:
    """A service's ASGI app: its routes and error handlers behind ``AuthAndLimits`` (a
    ``max_body_bytes`` of None: the service limits its bodies itself); Starlette's
    own errors (404 for an unknown path, 405, 415, ...) get the same JSON error body."""

    async def http_error(request: Request, error: Exception) -> Response:
        assert isinstance(error, HTTPException)
        return error_response(
            error.status_code,
            f"HTTP {error.status_code} {error.detail}",
            media_type=media_type,
            headers=error.headers,
            body=error_body,
        )

    return Starlette(
        routes=list(routes),
        middleware=[
            Middleware(
                AuthAndLimits,
                auth=auth,
                max_body_bytes=max_body_bytes,
                media_type=media_type,
                log=log,
                open_paths=open_paths,
                error_body=error_body,
            )
        ],
        exception_handlers={**errors, HTTPException: http_error},
    )
