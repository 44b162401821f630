"""The console's login page, in front of every page and API when basic authentication's users
are configured (``authentication.method=BASIC``, the REST proxy's settings): ``GET /login`` is
the form, ``POST /login`` checks the name and password as the listener's basic authentication
does and answers with a session cookie (or the form again, with the error), ``/logout`` ends
the session. A request of a session carries its user's login on as a basic ``Authorization``
header, so the app behind (the proxy's authentication, principal propagation) sees the user as
if the browser had sent it; a request that sends its own header (curl, a script) is judged by
that header as before."""

from __future__ import annotations

import base64
import html
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final
from urllib.parse import parse_qs

from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from strom.web.http import BasicAuth, error_response

__all__ = ["COOKIE", "LoginPages", "Sessions"]

COOKIE: Final = "strom_console_session"
SESSION_S: Final = 8 * 3600.0
"""A session ends this long after its last request."""
MAX_FORM_BYTES: Final = 16 << 10
_STYLE: Final = Path(__file__).parent / "assets" / "console.css"
_PAGE: Final = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>strom console: log in</title>
<style>{style}</style></head>
<body><header><span class="brand">strom</span></header><main>
<h1>Log in</h1>
<form id="login" method="post" action="/login">
<p><label>user <input id="login-user" name="username" autocomplete="username" value="{user}"
  autofocus></label></p>
<p><label>password <input id="login-password" name="password" type="password"
  autocomplete="current-password"></label></p>
<p><button id="login-submit" type="submit">Log in</button>
<span id="login-error" class="bad">{error}</span></p>
</form></main></body></html>
"""


@dataclass
class Sessions:
    """The logged-in sessions by cookie value: each one's ``Authorization`` header and when it
    ends (idle)."""

    idle_s: float = SESSION_S
    _found: dict[str, tuple[str, float]] = field(default_factory=dict)

    def start(self, authorization: str) -> str:
        token = secrets.token_urlsafe(32)
        self._found[token] = (authorization, time.monotonic() + self.idle_s)
        return token

    def authorization(self, token: str | None) -> str | None:
        """The session's header, its idle time restarted; None for no or an ended session."""
        now = time.monotonic()
        for ended in [t for t, (_, end) in self._found.items() if end < now]:
            del self._found[ended]
        if token is None or token not in self._found:
            return None
        header, _ = self._found[token]
        self._found[token] = (header, now + self.idle_s)
        return header

    def end(self, token: str | None) -> None:
        self._found.pop(token or "", None)


def login_page(user: str = "", error: str = "", status: int = 200) -> Response:
    """The form (with the console's style inline: its stylesheet is behind the login too)."""
    page = _PAGE.format(style=_STYLE.read_text(), user=html.escape(user), error=html.escape(error))
    return HTMLResponse(page, status)


def _cookie(headers: dict[str, str]) -> str | None:
    for part in headers.get("cookie", "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == COOKIE:
            return value
    return None


class LoginPages:
    """ASGI middleware: the login and logout pages, the session cookie, and a refusal (a
    redirect to the login page for a page, 401 for the API) without either a session or an
    ``Authorization`` header."""

    def __init__(self, app: ASGIApp, *, auth: BasicAuth, secure: bool) -> None:
        self.app = app
        self.auth = auth
        self.secure = secure
        self.sessions = Sessions()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        path, method = scope["path"], scope["method"]
        response: Response | None = None
        if path == "/login":
            response = await self._login(receive) if method == "POST" else login_page()
        elif path == "/logout":
            self.sessions.end(_cookie(headers))
            response = RedirectResponse("/login", 303)
            response.delete_cookie(COOKIE, path="/")
        elif "authorization" not in headers:
            header = self.sessions.authorization(_cookie(headers))
            if header is not None:
                passed = (b"authorization", header.encode("latin-1"))
                scope = {**scope, "headers": [*scope["headers"], passed]}
            elif path == "/" and method == "GET":
                response = RedirectResponse("/login", 303)
            else:
                response = error_response(401, "Log in first: /login")
        if response is not None:
            await response(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    async def _login(self, receive: Receive) -> Response:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if len(body) > MAX_FORM_BYTES:
                return login_page(error="The form is too large.", status=413)
            if not message.get("more_body"):
                break
        form = parse_qs(body.decode("utf-8", "replace"))
        user = form.get("username", [""])[0]
        password = form.get("password", [""])[0]
        header = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        refusal = self.auth.refusal(header)
        if refusal == 401:
            return login_page(user, "Wrong user name or password.", 401)
        if refusal == 403:
            return login_page(user, f"{user} may not use the console (no role allowed).", 403)
        response = RedirectResponse("/", 303)
        token = self.sessions.start(header)
        response.set_cookie(
            COOKIE, token, max_age=int(SESSION_S), path="/", secure=self.secure, httponly=True,
            samesite="strict",
        )  # fmt: skip
        return response
