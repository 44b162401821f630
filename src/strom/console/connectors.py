"""The console's Connectors page (``/api/console/connectors...``), over a Kafka Connect
cluster's REST API at ``--connect URL``: each connector's type, state, tasks and error (one
line of its trace, ``error_line``), and pause, resume and restart (with its tasks)."""

from __future__ import annotations

from typing import Any, Final
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from strom.console.services import ServiceClient
from strom.rest.errors import RestError
from strom.web.http import json_response

__all__ = ["connector_routes", "error_line"]

ACTIONS: Final = {
    "pause": ("PUT", "pause"),
    "resume": ("PUT", "resume"),
    "restart": ("POST", "restart?includeTasks=true&onlyFailed=false"),
}


def error_line(trace: str | None) -> str | None:
    """A failure's trace as one line: the exception and its message (the last line of a
    Python traceback, the first of a Java stack trace)."""
    lines = [line.strip() for line in (trace or "").splitlines() if line.strip()]
    if not lines:
        return None
    return lines[-1] if lines[0].startswith("Traceback") else lines[0]


def _row(name: str, entry: dict[str, Any]) -> dict[str, object]:
    status = entry.get("status") or {}
    info = entry.get("info") or {}
    connector = status.get("connector") or {}
    tasks = status.get("tasks") or []
    errors = [error_line(connector.get("trace"))] + [error_line(t.get("trace")) for t in tasks]
    return {
        "name": name,
        "type": status.get("type") or info.get("type"),
        "class": (info.get("config") or {}).get("connector.class"),
        "state": connector.get("state"),
        "worker": connector.get("worker_id"),
        "tasks": [{"id": t.get("id"), "state": t.get("state")} for t in tasks],
        "error": next((e for e in errors if e), None),
    }


def connector_routes(url: str | None) -> list[Route]:
    connect = ServiceClient("Connect", "--connect", url)

    async def connectors(request: Request) -> Response:
        found = await connect.get("/connectors?expand=status&expand=info")
        return json_response([_row(name, found[name]) for name in sorted(found)])

    async def act(request: Request) -> Response:
        name, action = request.path_params["name"], request.path_params["action"]
        if action not in ACTIONS:
            raise RestError(404, 404, f"No action {action}: pause, resume or restart.")
        method, path = ACTIONS[action]
        await connect.call(method, f"/connectors/{quote(name, safe='')}/{path}")
        return json_response({"connector": name, "action": action})

    base = "/api/console/connectors"
    return [Route(base, connectors), Route(f"{base}/{{name}}/{{action}}", act, methods=["POST"])]
