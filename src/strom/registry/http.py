"""HTTP plumbing of the REST API: Confluent's response content type, HTTP basic
authentication (401 and 403 as Confluent's), the request body limit and the request log."""

from __future__ import annotations

import base64
import binascii
import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass

from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from strom.registry.security import User

__all__ = ["CONTENT_TYPE", "AuthAndLimits", "BasicAuth", "raw_response", "registry_response"]

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
request_log = logging.getLogger("strom.registry.requests")


def registry_response(body: object, status: int = 200) -> Response:
    return Response(
        json.dumps(body, separators=(",", ":"), ensure_ascii=False),
        status,
        media_type=CONTENT_TYPE,
    )


def raw_response(text: str) -> Response:
    """A schema's own text as the body (the ``/schema`` endpoints)."""
    return Response(text, 200, media_type=CONTENT_TYPE)


@dataclass(frozen=True)
class BasicAuth:
    """HTTP basic authentication as Confluent's ``authentication.method=BASIC``: users from the
    JAAS realm's password file, and the roles (``authentication.roles``; ``*`` is any user)
    a user needs one of."""

    realm: str
    users: Mapping[str, User]
    roles: frozenset[str] = frozenset({"*"})

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


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    response = registry_response({"error_code": status, "message": message}, status)
    response.headers.update(headers or {})
    return response


class AuthAndLimits:
    """ASGI middleware: authenticates (all but ``/health``), refuses bodies over the limit
    with 413, and logs every request with its status and time."""

    def __init__(self, app: ASGIApp, *, auth: BasicAuth | None, max_body_bytes: int) -> None:
        self.app = app
        self.auth = auth
        self.max_body_bytes = max_body_bytes

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
                if self.auth is not None and scope["path"] != "/health"
                else None
            )
            if refusal == 401:
                assert self.auth is not None
                realm = {"WWW-Authenticate": f'Basic realm="{self.auth.realm}"'}
                await _error(401, "Unauthorized", realm)(scope, receive, logged_send)
                return
            if refusal == 403:
                await _error(403, "Forbidden")(scope, receive, logged_send)
                return
            if int(headers.get("content-length") or 0) > self.max_body_bytes:
                await _error(413, "HTTP 413 Payload Too Large")(scope, receive, logged_send)
                return
            await self.app(scope, self._limited(receive), logged_send)
        finally:
            request_log.info(
                "%s %s %s %d %.1fms",
                scope.get("client", ("-",))[0],
                scope["method"],
                scope["path"]
                + (f"?{scope['query_string'].decode()}" if scope["query_string"] else ""),
                status[0],
                (time.monotonic() - started) * 1000,
            )

    def _limited(self, receive: Receive) -> Receive:
        """Count a body sent without a length; past the limit the app sees a disconnect."""
        seen = [0]

        async def limited() -> Message:
            message = await receive()
            seen[0] += len(message.get("body", b""))
            if seen[0] > self.max_body_bytes:
                return {"type": "http.disconnect"}
            return message

        return limited
