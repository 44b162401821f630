"""Kafka Connect's REST API over a ``Herder``, as a Starlette app on the shared HTTP shell
(``strom.web``): the same paths, query parameters, bodies, status codes and
``{"error_code", "message"}`` errors, so Connect's clients and tools work unchanged; in a group
of workers, a request for another worker is forwarded to it as Connect does."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from strom import __version__
from strom.connect.errors import ConnectError
from strom.connect.herder import Herder
from strom.connect.offsets import parse_offsets_body
from strom.connect.plugins import converter_plugins, find_plugin, plugins
from strom.connect.records import TargetState
from strom.web import http as web

__all__ = ["create_app"]

request_log = logging.getLogger("strom.connect.requests")
Endpoint = Callable[[Request], Awaitable[Response]]


def _json(body: object, status: int = 200) -> Response:
    return web.json_response(body, status)


def _empty(status: int) -> Response:
    return Response(status_code=status)


def _flag(request: Request, name: str) -> bool:
    return request.query_params.get(name, "false").strip().lower() == "true"


async def _body(request: Request) -> Any:
    raw = await request.body()
    try:
        return json.loads(raw) if raw.strip() else None
    except ValueError as error:
        raise ConnectError.bad_request(f"Cannot parse the request body as JSON: {error}") from None


def _config(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ConnectError.bad_request("The connector config must be a JSON object")
    return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in value.items()}


class _Api:
    """The endpoints; blocking herder calls run in threads. In a group, writes are the
    leader's and task calls the worker's that runs the task: another worker forwards them
    (``?forward=`` as Connect: one more hop allowed from the worker a client called)."""

    def __init__(self, herder: Herder, *, forward_timeout: float) -> None:
        self.herder = herder
        self._client = httpx.AsyncClient(timeout=forward_timeout)

    def _at_leader(self, endpoint: Endpoint) -> Endpoint:
        async def routed(request: Request) -> Response:
            return await self._forwarded(request, None) or await endpoint(request)

        return routed

    def _at_owner(self, endpoint: Endpoint) -> Endpoint:
        async def routed(request: Request) -> Response:
            task_of = request.path_params["name"]
            return await self._forwarded(request, task_of) or await endpoint(request)

        return routed

    async def _forwarded(self, request: Request, task_of: str | None) -> Response | None:
        """The answer of the worker this request is for, or None when that is this one."""
        target = self.herder.forward_to(task_of)
        if target is None:
            return None
        forward = request.query_params.get("forward")
        if forward is not None and forward.strip().lower() == "false":
            raise ConnectError(
                409,
                "Cannot complete request because of a conflicting operation (e.g. worker"
                " rebalance)",
            )
        params = httpx.QueryParams(
            [(k, v) for k, v in request.query_params.multi_items() if k != "forward"]
        ).add("forward", "true" if forward is None else "false")
        try:
            answer = await web.forward(self._client, request, target, params=params)
        except httpx.HTTPError as error:
            raise ConnectError(
                500, f"IO Error trying to forward REST request: {type(error).__name__}: {error}"
            ) from None
        if answer.is_success:  # read-your-writes here too
            await self._call(self.herder.catch_up)
        return web.relayed(answer)

    async def _call(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await asyncio.to_thread(function, *args, **kwargs)

    async def root(self, request: Request) -> Response:
        return _json(
            {"version": __version__, "commit": "strom", "kafka_cluster_id": self.herder.cluster_id}
        )

    async def connectors(self, request: Request) -> Response:
        names = await self._call(self.herder.connector_names)
        expand = request.query_params.getlist("expand")
        if not expand:
            return _json(names)
        out: dict[str, dict[str, Any]] = {}
        for name in names:
            try:
                entry = {}
                if "status" in expand:
                    entry["status"] = await self._call(self.herder.status, name)
                if "info" in expand:
                    entry["info"] = await self._call(self.herder.info, name)
            except ConnectError:  # deleted meanwhile
                continue
            out[name] = entry
        return _json(out)

    async def create(self, request: Request) -> Response:
        body = await _body(request)
        if not isinstance(body, dict):
            raise ConnectError.bad_request("The request body must be a JSON object")
        config = _config(body.get("config") or {})
        name = body.get("name") or config.get("name")
        if not isinstance(name, str) or not name.strip():
            raise ConnectError.bad_request("Connector name configuration must be provided")
        if config.get("name", name) != name:
            raise ConnectError.bad_request(
                f"Connector name configuration ({config['name']}) doesn't match connector name"
                f" in the URL ({name})"
            )
        initial = body.get("initial_state") or "RUNNING"
        states = {
            "RUNNING": TargetState.STARTED,
            "PAUSED": TargetState.PAUSED,
            "STOPPED": TargetState.STOPPED,
        }
        if initial not in states:
            raise ConnectError.bad_request(
                f"Invalid initial state {initial}: RUNNING, PAUSED or STOPPED"
            )
        _, info = await self._call(
            self.herder.put,
            name,
            {**config, "name": name},
            create_only=True,
            initial=states[initial],
        )
        return _json(info, 201)

    async def info(self, request: Request) -> Response:
        return _json(await self._call(self.herder.info, request.path_params["name"]))

    async def get_config(self, request: Request) -> Response:
        info = await self._call(self.herder.info, request.path_params["name"])
        return _json(info["config"])

    async def put_config(self, request: Request) -> Response:
        name = request.path_params["name"]
        config = _config(await _body(request))
        if config.get("name", name) != name:
            raise ConnectError.bad_request(
                f"Connector name configuration ({config['name']}) doesn't match connector name"
                f" in the URL ({name})"
            )
        created, info = await self._call(
            self.herder.put, name, {**config, "name": name}, create_only=False
        )
        return _json(info, 201 if created else 200)

    async def status(self, request: Request) -> Response:
        return _json(await self._call(self.herder.status, request.path_params["name"]))

    async def tasks(self, request: Request) -> Response:
        return _json(await self._call(self.herder.tasks, request.path_params["name"]))

    async def task_status(self, request: Request) -> Response:
        name, task = request.path_params["name"], request.path_params["task"]
        return _json(await self._call(self.herder.task_status, name, task))

    async def restart(self, request: Request) -> Response:
        include, only = _flag(request, "includeTasks"), _flag(request, "onlyFailed")
        status = await self._call(
            self.herder.restart,
            request.path_params["name"],
            include_tasks=include,
            only_failed=only,
        )
        return _json(status, 202) if include or only else _empty(204)

    async def restart_task(self, request: Request) -> Response:
        name, task = request.path_params["name"], request.path_params["task"]
        await self._call(self.herder.restart_task, name, task)
        return _empty(204)

    async def pause(self, request: Request) -> Response:
        await self._call(self.herder.set_target, request.path_params["name"], TargetState.PAUSED)
        return _empty(202)

    async def resume(self, request: Request) -> Response:
        await self._call(self.herder.set_target, request.path_params["name"], TargetState.STARTED)
        return _empty(202)

    async def stop(self, request: Request) -> Response:
        await self._call(self.herder.set_target, request.path_params["name"], TargetState.STOPPED)
        return _empty(204)

    async def delete(self, request: Request) -> Response:
        await self._call(self.herder.delete, request.path_params["name"])
        return _empty(204)

    async def offsets(self, request: Request) -> Response:
        return _json(await self._call(self.herder.offsets, request.path_params["name"]))

    async def alter_offsets(self, request: Request) -> Response:
        entries = parse_offsets_body(await _body(request))
        message = await self._call(self.herder.alter_offsets, request.path_params["name"], entries)
        return _json({"message": message})

    async def reset_offsets(self, request: Request) -> Response:
        message = await self._call(self.herder.alter_offsets, request.path_params["name"], None)
        return _json({"message": message})

    async def topics(self, request: Request) -> Response:
        name = request.path_params["name"]
        return _json({name: {"topics": await self._call(self.herder.active_topics, name)}})

    async def reset_topics(self, request: Request) -> Response:
        await self._call(self.herder.reset_topics, request.path_params["name"])
        return _empty(202)

    async def connector_plugins(self, request: Request) -> Response:
        found = [plugin.info() for plugin in plugins()]
        if request.query_params.get("connectorsOnly", "true").strip().lower() == "false":
            found += converter_plugins()
        return _json(found)

    async def validate(self, request: Request) -> Response:
        plugin_name = request.path_params["plugin"]
        config = _config(await _body(request))
        plugin = find_plugin(plugin_name)
        given = config.setdefault("connector.class", plugin_name)
        if given not in plugin.aliases():
            raise ConnectError.bad_request(
                f"Included connector type {given} does not match request type {plugin_name}"
            )
        return _json(await self._call(self.herder.validate, plugin_name, config))

    def routes(self) -> list[Route]:
        leader, owner = self._at_leader, self._at_owner
        table: list[tuple[str, list[tuple[str, Endpoint]]]] = [
            ("/", [("GET", self.root)]),
            ("/connectors", [("GET", self.connectors), ("POST", leader(self.create))]),
            ("/connectors/{name}", [("GET", self.info), ("DELETE", leader(self.delete))]),
            (
                "/connectors/{name}/config",
                [("GET", self.get_config), ("PUT", leader(self.put_config))],
            ),
            ("/connectors/{name}/status", [("GET", self.status)]),
            ("/connectors/{name}/tasks", [("GET", self.tasks)]),
            ("/connectors/{name}/tasks/{task:int}/status", [("GET", self.task_status)]),
            ("/connectors/{name}/tasks/{task:int}/restart", [("POST", owner(self.restart_task))]),
            ("/connectors/{name}/restart", [("POST", leader(self.restart))]),
            ("/connectors/{name}/pause", [("PUT", leader(self.pause))]),
            ("/connectors/{name}/resume", [("PUT", leader(self.resume))]),
            ("/connectors/{name}/stop", [("PUT", leader(self.stop))]),
            (
                "/connectors/{name}/offsets",
                [
                    ("GET", self.offsets),
                    ("PATCH", leader(self.alter_offsets)),
                    ("DELETE", leader(self.reset_offsets)),
                ],
            ),
            ("/connectors/{name}/topics", [("GET", self.topics)]),
            ("/connectors/{name}/topics/reset", [("PUT", leader(self.reset_topics))]),
            ("/connector-plugins", [("GET", self.connector_plugins)]),
            ("/connector-plugins/{plugin}/config/validate", [("PUT", self.validate)]),
        ]
        return [
            Route(path, endpoint, methods=[method])
            for path, endpoints in table
            for method, endpoint in endpoints
        ]


def create_app(
    herder: Herder, *, auth: web.BasicAuth | None = None, max_body_bytes: int = 16 << 20
) -> Starlette:
    """The ASGI app of one worker."""
    return web.create_app(
        _Api(herder, forward_timeout=herder.settings.timeout).routes(),
        errors={ConnectError: _connect_error},
        auth=auth,
        max_body_bytes=max_body_bytes,
        log=request_log,
    )


async def _connect_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, ConnectError)
    return _json(error.body, error.status)
