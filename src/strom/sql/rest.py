"""ksqlDB's REST API over an `Engine`, as a Starlette app on the shared HTTP shell
(`strom.web`): `/ksql`, `/query` and `/query-stream` (push queries, chunked, pull queries,
and PRINT's lines as text), `/close-query`,
`/info`, `/healthcheck` and `/status`, with ksqlDB's bodies and `statement_error`s, so ksqlDB's
clients and scripts work unchanged."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, TypeVar, cast

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from strom import __version__
from strom.sql import entities
from strom.sql.engine import Engine, StatementError
from strom.sql.printer import TopicPrint
from strom.sql.pull import PullQuery
from strom.sql.push import PushQuery
from strom.web import http as web

__all__ = ["DELIMITED", "create_app"]

request_log = logging.getLogger("strom.sql.requests")
DELIMITED = "application/vnd.ksqlapi.delimited.v1"
"""`/query-stream`'s default form: the header, then one JSON array per row, a line each."""
KSQL_VERSION = "0.29.0"
Endpoint = Callable[[Request], Awaitable[Response]]


def _json(body: object, status: int = 200) -> Response:
    return web.json_response(body, status)


def _error_body(status: int, message: str) -> object:
    """ksqlDB's `KsqlErrorMessage` for an HTTP status (its error code: the status times 100)."""
    return {"@type": "generic_error", "error_code": status * 100, "message": message}


def _generic_error(message: str, code: int = entities.BAD_REQUEST) -> Response:
    return _json({"@type": "generic_error", "error_code": code, "message": message}, code // 100)


async def _body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    try:
        body = json.loads(raw) if raw.strip() else {}
    except ValueError as error:
        raise _BadRequest(f"Cannot parse the request body as JSON: {error}") from None
    if not isinstance(body, dict):
        raise _BadRequest("The request body must be a JSON object")
    return body


class _BadRequest(Exception):
    pass


Query = PushQuery | PullQuery | TopicPrint
Row = TypeVar("Row")


async def _rows(push: Query, rows: Iterator[Row | None]) -> AsyncIterator[Row]:
    """The query's rows, without blocking the event loop; closes it at the end (the client
    gone, its LIMIT reached, or the query closed)."""
    end = object()
    try:
        while True:
            row = await asyncio.to_thread(next, rows, end)
            if row is end:
                return
            if row is not None:
                yield cast(Row, row)
    finally:
        await asyncio.to_thread(push.close)


def _printed(printing: TopicPrint) -> StreamingResponse:
    """PRINT's answer on both query endpoints: its lines as text, as ksqlDB's `/query`."""

    async def lines() -> AsyncIterator[bytes]:
        async for text in _rows(printing, printing.rows()):
            yield text.encode() + b"\n"

    return StreamingResponse(lines(), media_type="text/plain")


class _Api:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    async def ksql(self, request: Request) -> Response:
        body = await _body(request)
        text = body.get("ksql")
        if not isinstance(text, str) or not text.strip():
            return _generic_error("The 'ksql' field of the request is missing or empty.")
        properties = body.get("streamsProperties") or {}
        return _json(await asyncio.to_thread(self.engine.ksql, text, properties))

    async def _start(self, text: object, properties: object) -> Query:
        if not isinstance(text, str) or not text.strip():
            raise _BadRequest("The request names no query.")
        props = properties if isinstance(properties, dict) else {}
        return await asyncio.to_thread(self.engine.start_query, text, props)

    async def query(self, request: Request) -> Response:
        body = await _body(request)
        push = await self._start(body.get("ksql"), body.get("streamsProperties"))
        if isinstance(push, TopicPrint):
            return _printed(push)

        async def chunks() -> AsyncIterator[bytes]:
            header = {"header": {"queryId": push.id, "schema": push.schema()}}
            yield b"[" + json.dumps(header).encode()
            async for row in _rows(push, push.rows()):
                yield b",\n" + json.dumps({"row": {"columns": row}}).encode()
            if push.final_message is not None:
                yield b",\n" + json.dumps({"finalMessage": push.final_message}).encode()
            yield b"]\n"

        return StreamingResponse(chunks(), media_type="application/json")

    async def query_stream(self, request: Request) -> Response:
        body = await _body(request)
        push = await self._start(body.get("sql"), body.get("properties"))
        if isinstance(push, TopicPrint):
            return _printed(push)
        as_json = "application/json" in request.headers.get("accept", "")

        async def lines() -> AsyncIterator[bytes]:
            header = json.dumps(push.header()).encode()
            yield (b"[" + header) if as_json else header + b"\n"
            async for row in _rows(push, push.rows()):
                line = json.dumps(row).encode()
                yield (b",\n" + line) if as_json else line + b"\n"
            if as_json:
                yield b"]\n"

        media_type = "application/json" if as_json else DELIMITED
        return StreamingResponse(lines(), media_type=media_type)

    async def close_query(self, request: Request) -> Response:
        query_id = (await _body(request)).get("queryId")
        if not isinstance(query_id, str) or not self.engine.close_push_query(query_id):
            return _generic_error(f"No query with id {query_id}")
        return Response(status_code=200)

    async def info(self, request: Request) -> Response:
        return _json(
            {
                "KsqlServerInfo": {
                    "version": KSQL_VERSION,
                    "kafkaClusterId": "",
                    "ksqlServiceId": self.engine.settings.service_id,
                    "serverStatus": "RUNNING",
                    "strom": __version__,
                }
            }
        )

    async def healthcheck(self, request: Request) -> Response:
        healthy = {"isHealthy": True}
        return _json(
            {
                "isHealthy": True,
                "details": {"metastore": healthy, "kafka": healthy, "commandRunner": healthy},
            }
        )

    async def status(self, request: Request) -> Response:
        statuses = dict(self.engine.statuses)
        return _json({"commandStatuses": {k: v["status"] for k, v in statuses.items()}})

    async def command_status(self, request: Request) -> Response:
        p = request.path_params
        command_id = f"{p['type']}/{p['entity']}/{p['action']}"
        found = self.engine.statuses.get(command_id)
        if found is None:
            return _generic_error(
                f"Successful command with ID {command_id} not found", entities.NOT_FOUND
            )
        return _json(found)

    def routes(self) -> list[Route]:
        table: list[tuple[str, str, Endpoint]] = [
            ("/ksql", "POST", self.ksql),
            ("/query", "POST", self.query),
            ("/query-stream", "POST", self.query_stream),
            ("/close-query", "POST", self.close_query),
            ("/info", "GET", self.info),
            ("/healthcheck", "GET", self.healthcheck),
            ("/status", "GET", self.status),
            ("/status/{type}/{entity}/{action}", "GET", self.command_status),
        ]
        return [Route(path, endpoint, methods=[method]) for path, method, endpoint in table]


def create_app(engine: Engine, *, auth: web.BasicAuth | None = None) -> Starlette:
    return web.create_app(
        _Api(engine).routes(),
        errors={StatementError: _statement_error, _BadRequest: _bad_request},
        auth=auth,
        log=request_log,
        open_paths=frozenset({"/healthcheck"}),
        error_body=_error_body,
    )


async def _statement_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, StatementError)
    return _json(error.body, error.status)


async def _bad_request(request: Request, error: Exception) -> Response:
    return _generic_error(str(error))
