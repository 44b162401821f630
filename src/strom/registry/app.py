"""The REST API of Confluent Schema Registry over a ``RegistryService``, as a Starlette app:
the same paths, query parameters, bodies, content type and error bodies. Writes that reach an
instance that is not the primary are forwarded to the primary and its answer is relayed."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from strom.registry.commands import SchemaRequest, Writes
from strom.registry.errors import RegistryError
from strom.registry.http import CONTENT_TYPE, raw_response, registry_response, request_log
from strom.registry.protobuf_schema import ProtobufSchema
from strom.registry.schema_types import SchemaType
from strom.registry.service import RegistryService
from strom.registry.state import RegistryState, StoredSchema
from strom.web import http as web

__all__ = ["create_app"]

log = logging.getLogger(__name__)

_JSON_TYPES = (
    "application/vnd.schemaregistry.v1+json",
    "application/vnd.schemaregistry+json",
    "application/json",
    "application/octet-stream",
)
_FORWARDED = "X-Strom-Registry-Forwarded"
_Endpoints = list[tuple[str, Callable[[Request], Awaitable[Response]]]]


def _in_format(state: RegistryState, stored: StoredSchema, fmt: str | None) -> dict[str, object]:
    """A schema's body; ``format=serialized`` turns a Protobuf ``.proto`` text into the base64
    descriptor that confluent-kafka's Python serializers read."""
    body = stored.to_json()
    if fmt == "serialized" and stored.schema_type is SchemaType.PROTOBUF:
        parsed = Writes(state).parsed(stored)
        assert isinstance(parsed, ProtobufSchema)
        body["schema"] = parsed.serialized()
    return body


def _flag(request: Request, name: str) -> bool:
    return request.query_params.get(name, "false").lower() == "true"


async def _body(request: Request) -> Any:
    content_type = request.headers.get("content-type", "application/vnd.schemaregistry.v1+json")
    if content_type.split(";")[0].strip().lower() not in _JSON_TYPES:
        raise HTTPException(415)
    raw = await request.body()
    try:
        return json.loads(raw) if raw.strip() else None
    except ValueError:
        raise RegistryError(400, 400, "Unexpected character in the request body") from None


class _Api:
    """The endpoints; each turns a request into a state query or a write."""

    def __init__(self, service: RegistryService) -> None:
        self.service = service
        self._client = httpx.AsyncClient(timeout=service.store.timeout)

    async def _read(self, query: Callable[[RegistryState], Any]) -> Response:
        return registry_response(self.service.read(query))

    async def _write(self, request: Request, command: Callable[[Writes], Any]) -> Response:
        """Carry out a write here if this instance is primary, else forward it and, once it
        succeeded, read ``_schemas`` up to its end so that this instance shows the write too. A
        primary that cannot be reached (it just stopped) is looked up again until the store
        timeout."""
        deadline = time.monotonic() + self.service.store.timeout
        while True:
            primary = await asyncio.to_thread(self.service.primary.primary_url)
            if primary is None:
                return registry_response(await asyncio.to_thread(self.service.write, command))
            try:
                answer = await self._forward(request, primary)
            except httpx.ConnectError as error:  # not sent: safe to send again
                if time.monotonic() > deadline:
                    raise RegistryError.forwarding(
                        f"Error while forwarding the request to the primary {primary}: {error}"
                    ) from None
                await asyncio.sleep(0.5)
                continue
            if answer.status_code == 200:  # read-your-writes here too: wait for the records
                await asyncio.to_thread(self.service.store.catch_up)
            return answer

    async def _forward(self, request: Request, primary: str) -> Response:
        if request.headers.get(_FORWARDED):
            raise RegistryError.forwarding("The primary changed while forwarding")
        try:
            answer = await web.forward(
                self._client,
                request,
                primary,
                params=request.query_params,
                headers={_FORWARDED: "1"},
            )
        except httpx.ConnectError:
            raise
        except httpx.HTTPError as error:
            raise RegistryError.forwarding(
                f"Error while forwarding the request to the primary {primary}: {error}"
            ) from None
        return web.relayed(answer)

    # -- schemas by id ---------------------------------------------------------------------
    async def schema_types(self, request: Request) -> Response:
        return registry_response([t.value for t in SchemaType])

    async def schema_by_id(self, request: Request) -> Response:
        schema_id, fmt = request.path_params["id"], request.query_params.get("format")
        return await self._read(lambda state: _in_format(state, state.schema(schema_id), fmt))

    async def raw_schema_by_id(self, request: Request) -> Response:
        schema_id = request.path_params["id"]
        return raw_response(self.service.read(lambda state: state.schema(schema_id).text))

    async def subjects_by_id(self, request: Request) -> Response:
        schema_id, deleted = request.path_params["id"], _flag(request, "deleted")

        def query(state: RegistryState) -> list[str]:
            state.schema(schema_id)
            return sorted({v.subject for v in state.uses(schema_id, deleted=deleted)})

        return await self._read(query)

    async def versions_by_id(self, request: Request) -> Response:
        schema_id, deleted = request.path_params["id"], _flag(request, "deleted")

        def query(state: RegistryState) -> list[dict[str, object]]:
            state.schema(schema_id)
            uses = sorted(
                state.uses(schema_id, deleted=deleted), key=lambda v: (v.subject, v.version)
            )
            return [{"subject": v.subject, "version": v.version} for v in uses]

        return await self._read(query)

    # -- subjects --------------------------------------------------------------------------
    async def subjects(self, request: Request) -> Response:
        deleted, prefix = _flag(request, "deleted"), request.query_params.get("subjectPrefix", "")
        return await self._read(lambda state: state.subject_names(deleted=deleted, prefix=prefix))

    async def versions(self, request: Request) -> Response:
        subject, deleted = request.path_params["subject"], _flag(request, "deleted")
        return await self._read(
            lambda state: [v.version for v in state.versions(subject, deleted=deleted)]
        )

    async def version(self, request: Request) -> Response:
        subject, version = request.path_params["subject"], request.path_params["version"]
        deleted, fmt = _flag(request, "deleted"), request.query_params.get("format")

        def query(state: RegistryState) -> dict[str, object]:
            stored = state.version(subject, version, deleted=deleted)
            return {**stored.to_json(), **_in_format(state, stored.schema, fmt)}

        return await self._read(query)

    async def raw_version(self, request: Request) -> Response:
        subject, version = request.path_params["subject"], request.path_params["version"]
        deleted = _flag(request, "deleted")
        return raw_response(
            self.service.read(
                lambda state: state.version(subject, version, deleted=deleted).schema.text
            )
        )

    async def referenced_by(self, request: Request) -> Response:
        subject, version = request.path_params["subject"], request.path_params["version"]

        def query(state: RegistryState) -> list[int]:
            return state.referenced_by(subject, state.version(subject, version).version)

        return await self._read(query)

    async def register(self, request: Request) -> Response:
        subject, normalize = request.path_params["subject"], _flag(request, "normalize")
        schema = SchemaRequest.from_json(await _body(request))

        def command(writes: Writes) -> tuple[dict[str, int], Any]:
            registration = writes.register(subject, schema, normalize=normalize)
            return {"id": registration.id}, registration.records

        return await self._write(request, command)

    async def lookup(self, request: Request) -> Response:
        subject = request.path_params["subject"]
        normalize, deleted = _flag(request, "normalize"), _flag(request, "deleted")
        schema = SchemaRequest.from_json(await _body(request))
        return await self._read(
            lambda state: (
                Writes(state)
                .lookup(subject, schema, normalize=normalize, deleted=deleted)
                .to_json()
            )
        )

    async def delete_version(self, request: Request) -> Response:
        subject, version = request.path_params["subject"], request.path_params["version"]
        permanent = _flag(request, "permanent")
        return await self._write(
            request, lambda writes: writes.delete_version(subject, version, permanent=permanent)
        )

    async def delete_subject(self, request: Request) -> Response:
        subject, permanent = request.path_params["subject"], _flag(request, "permanent")
        return await self._write(
            request, lambda writes: writes.delete_subject(subject, permanent=permanent)
        )

    # -- compatibility ---------------------------------------------------------------------
    async def compatibility(self, request: Request) -> Response:
        subject = request.path_params["subject"]
        version: str | None = request.path_params.get("version")
        verbose, normalize = _flag(request, "verbose"), _flag(request, "normalize")
        schema = SchemaRequest.from_json(await _body(request))

        def query(state: RegistryState) -> dict[str, object]:
            if version is not None:
                state.version(subject, version)
            messages = Writes(state).check(subject, version, schema, normalize=normalize)
            answer: dict[str, object] = {"is_compatible": not messages}
            if verbose:
                answer["messages"] = messages
            return answer

        return await self._read(query)

    # -- config and mode -------------------------------------------------------------------
    async def get_config(self, request: Request) -> Response:
        subject: str | None = request.path_params.get("subject")
        fallback = _flag(request, "defaultToGlobal")

        def query(state: RegistryState) -> dict[str, str]:
            if subject is not None and subject not in state.configs and not fallback:
                raise RegistryError.compatibility_not_configured(subject)
            return {"compatibilityLevel": state.compatibility(subject).value}

        return await self._read(query)

    async def put_config(self, request: Request) -> Response:
        subject: str | None = request.path_params.get("subject")
        body = await _body(request)

        def command(writes: Writes) -> tuple[dict[str, str], Any]:
            level, record = writes.set_compatibility(subject, body)
            return {"compatibility": level}, (record,)

        return await self._write(request, command)

    async def delete_config(self, request: Request) -> Response:
        subject: str | None = request.path_params.get("subject")

        def command(writes: Writes) -> tuple[dict[str, str], Any]:
            level, record = writes.delete_compatibility(subject)
            return {"compatibilityLevel": level}, (record,)

        return await self._write(request, command)

    async def get_mode(self, request: Request) -> Response:
        subject: str | None = request.path_params.get("subject")
        fallback = _flag(request, "defaultToGlobal")

        def query(state: RegistryState) -> dict[str, str]:
            if subject is not None and subject not in state.modes and not fallback:
                raise RegistryError.mode_not_configured(subject)
            return {"mode": state.mode(subject).value}

        return await self._read(query)

    async def put_mode(self, request: Request) -> Response:
        subject: str | None = request.path_params.get("subject")
        body, force = await _body(request), _flag(request, "force")

        def command(writes: Writes) -> tuple[dict[str, str], Any]:
            mode, record = writes.set_mode(subject, body, force=force)
            return {"mode": mode}, (record,)

        return await self._write(request, command)

    async def delete_mode(self, request: Request) -> Response:
        subject: str = request.path_params["subject"]

        def command(writes: Writes) -> tuple[dict[str, str], Any]:
            mode, record = writes.delete_mode(subject)
            return {"mode": mode}, (record,)

        return await self._write(request, command)

    # -- service ---------------------------------------------------------------------------
    async def root(self, request: Request) -> Response:
        return registry_response({})

    async def health(self, request: Request) -> Response:
        if not self.service.ready.is_set():
            return registry_response({"status": "STARTING"}, status=503)
        return registry_response({"status": "UP", "primary": self.service.primary.is_primary})

    def routes(self) -> list[Route]:
        config: _Endpoints = [
            ("GET", self.get_config),
            ("PUT", self.put_config),
            ("DELETE", self.delete_config),
        ]
        mode: _Endpoints = [("GET", self.get_mode), ("PUT", self.put_mode)]
        table: list[tuple[str, _Endpoints]] = [
            ("/", [("GET", self.root)]),
            ("/health", [("GET", self.health)]),
            ("/schemas/types", [("GET", self.schema_types)]),
            ("/schemas/ids/{id:int}", [("GET", self.schema_by_id)]),
            ("/schemas/ids/{id:int}/schema", [("GET", self.raw_schema_by_id)]),
            ("/schemas/ids/{id:int}/subjects", [("GET", self.subjects_by_id)]),
            ("/schemas/ids/{id:int}/versions", [("GET", self.versions_by_id)]),
            ("/subjects", [("GET", self.subjects)]),
            ("/subjects/{subject}", [("POST", self.lookup), ("DELETE", self.delete_subject)]),
            ("/subjects/{subject}/versions", [("GET", self.versions), ("POST", self.register)]),
            (
                "/subjects/{subject}/versions/{version}",
                [("GET", self.version), ("DELETE", self.delete_version)],
            ),
            ("/subjects/{subject}/versions/{version}/schema", [("GET", self.raw_version)]),
            (
                "/subjects/{subject}/versions/{version}/referencedby",
                [("GET", self.referenced_by)],
            ),
            ("/compatibility/subjects/{subject}/versions", [("POST", self.compatibility)]),
            (
                "/compatibility/subjects/{subject}/versions/{version}",
                [("POST", self.compatibility)],
            ),
            ("/config", config),
            ("/config/{subject}", config),
            ("/mode", mode),
            ("/mode/{subject}", [*mode, ("DELETE", self.delete_mode)]),
        ]
        return [
            Route(path, endpoint, methods=[method])
            for path, endpoints in table
            for method, endpoint in endpoints
        ]


def create_app(
    service: RegistryService, *, auth: web.BasicAuth | None = None, max_body_bytes: int = 16 << 20
) -> Starlette:
    """The ASGI app of one registry instance (``/health`` answers without authentication)."""
    return web.create_app(
        _Api(service).routes(),
        errors={RegistryError: _registry_error},
        auth=auth,
        max_body_bytes=max_body_bytes,
        media_type=CONTENT_TYPE,
        log=request_log,
        open_paths=frozenset({"/health"}),
    )


async def _registry_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, RegistryError)
    return registry_response(error.body, status=error.status)
