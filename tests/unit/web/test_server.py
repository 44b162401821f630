"""The shared HTTP shell: ``listeners`` parsing, and an app served on a free port answering
unknown paths, wrong methods and oversized bodies with ``{"error_code", "message"}``."""

from __future__ import annotations

import logging

import httpx
import pytest
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from strom.web.http import create_app, json_response
from strom.web.server import HttpServer, Listener


def test_listeners_first_entry() -> None:
    assert Listener.parse("http://localhost:8083") == Listener("http", "localhost", 8083)
    assert Listener.parse("HTTPS://0.0.0.0:443,http://:80") == Listener("https", "0.0.0.0", 443)
    assert Listener.parse("127.0.0.1:0") == Listener("http", "127.0.0.1", 0)
    assert Listener.parse("http://[::1]:8083") == Listener("http", "::1", 8083)
    for bad in ("localhost", "ftp://h:1", "http://h:port"):
        with pytest.raises(ValueError, match="listeners: expected http://HOST:PORT"):
            Listener.parse(bad)


class _Refused(Exception):
    pass


async def _echo(request: Request) -> Response:
    body = await request.body()
    if body == b"refuse":
        raise _Refused
    return json_response({"got": len(body)})


async def _refused(request: Request, error: Exception) -> Response:
    return json_response({"error_code": 409, "message": "refused"}, 409)


def test_served_app_errors_are_json() -> None:
    app = create_app(
        [Route("/echo", _echo, methods=["POST"])],
        errors={_Refused: _refused},
        max_body_bytes=10,
        log=logging.getLogger("test.web"),
    )
    server = HttpServer(Listener("http", "127.0.0.1", 0))
    server.start(app)
    try:
        assert server.url == f"http://127.0.0.1:{server.port}"
        with httpx.Client(base_url=server.url, timeout=10) as client:
            assert client.post("/echo", content=b"abc").json() == {"got": 3}
            assert client.post("/echo", content=b"refuse").json()["error_code"] == 409
            missing = client.get("/nowhere")
            assert missing.status_code == 404
            assert missing.json() == {"error_code": 404, "message": "HTTP 404 Not Found"}
            wrong = client.get("/echo")
            assert (wrong.status_code, wrong.json()["error_code"]) == (405, 405)
            assert wrong.headers["allow"] == "POST"
            big = client.post("/echo", content=b"x" * 11)
            assert (big.status_code, big.json()["error_code"]) == (413, 413)
    finally:
        server.stop()
