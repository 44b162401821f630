"""The console's SQL page (``/api/console/sql...``), over a SQL server's REST API at ``--sql URL``
(``strom sql``, or ksqlDB): the persistent queries with their state and error (``SHOW QUERIES``,
and ``EXPLAIN`` of a query in ERROR for its ``queryErrors``), the streams and tables, and
``TERMINATE`` of a query."""

from __future__ import annotations

import re
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from strom.console.services import ServiceClient
from strom.rest.errors import RestError
from strom.web.http import json_response

__all__ = ["sql_routes"]

QUERY_ID: Final = re.compile(r"[A-Za-z0-9_]+")
"""A query id as ksqlDB makes them (``CSAS_BIG_3``): safe to put in a statement."""


def _query_error(described: Any) -> str | None:
    errors = (described.get("queryDescription") or {}).get("queryErrors") or []
    return next((e.get("errorMessage") for e in errors if e.get("errorMessage")), None)


def sql_routes(url: str | None) -> list[Route]:
    server = ServiceClient("SQL server", "--sql", url)

    async def ksql(text: str) -> list[Any]:
        answer = await server.call("POST", "/ksql", {"ksql": text, "streamsProperties": {}})
        return answer if isinstance(answer, list) else []

    async def overview(request: Request) -> Response:
        queries, streams, tables = await ksql("SHOW QUERIES; SHOW STREAMS; SHOW TABLES;")
        rows = []
        for q in queries.get("queries", []):
            error = None
            if q.get("state") == "ERROR":
                [described] = await ksql(f"EXPLAIN {q['id']};")
                error = _query_error(described)
            rows.append({"id": q["id"], "state": q.get("state"), "sinks": q.get("sinks", []),
                         "statement": " ".join(str(q.get("queryString", "")).split()),
                         "error": error})  # fmt: skip
        sources = [
            {"name": s["name"], "kind": kind, "topic": s.get("topic"),
             "key_format": s.get("keyFormat"), "value_format": s.get("valueFormat")}
            for kind, found in (("STREAM", streams.get("streams", [])),
                                ("TABLE", tables.get("tables", [])))
            for s in found
        ]  # fmt: skip
        return json_response({"queries": rows, "sources": sources})

    async def terminate(request: Request) -> Response:
        query_id = request.path_params["query_id"]
        if not QUERY_ID.fullmatch(query_id):
            raise RestError(400, 400, f"Not a query id: {query_id}")
        await ksql(f"TERMINATE {query_id};")
        return json_response({"query": query_id, "action": "terminate"})

    base = "/api/console/sql"
    return [
        Route(base, overview),
        Route(f"{base}/queries/{{query_id}}/terminate", terminate, methods=["POST"]),
    ]
