"""The console's Schemas page (``/api/console/schemas...``), over the schema registry's REST API
at ``schema.registry.url``: subjects with their latest version, a subject's versions and
compatibility level, and the diff between two of its versions (``schema_diff``, pure)."""

from __future__ import annotations

import difflib
import json
from urllib.parse import quote

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from strom.console.services import ServiceClient
from strom.rest.errors import RestError
from strom.web.http import json_response

__all__ = ["registry_routes", "schema_diff"]


def _lines(schema: str) -> list[str]:
    """A schema's lines as the diff compares them: JSON (Avro, JSON Schema) indented, so that a
    schema registered on one line still diffs by field; other text (Protobuf) as it is."""
    try:
        return json.dumps(json.loads(schema), indent=2, sort_keys=False).splitlines()
    except ValueError:
        return schema.splitlines()


def schema_diff(old: str, new: str) -> list[list[str]]:
    """The lines of ``new`` against ``old``: ``["+", line]`` added, ``["-", line]`` removed,
    ``[" ", line]`` kept."""
    found = []
    for line in difflib.ndiff(_lines(old), _lines(new)):
        if line[:1] in ("+", "-", " "):
            found.append([line[0], line[2:]])
    return found


def registry_routes(url: str | None) -> list[Route]:
    _get = ServiceClient("schema registry", "--registry", url).get

    async def _level(subject: str | None) -> str | None:
        path = "/config" if subject is None else f"/config/{quote(subject, safe='')}"
        try:
            found = await _get(path + ("" if subject is None else "?defaultToGlobal=true"))
        except RestError:
            return None  # no level set
        return str(found.get("compatibilityLevel") or found.get("compatibility"))

    async def subjects(request: Request) -> Response:
        rows = []
        for subject in sorted(await _get("/subjects")):
            latest = await _get(f"/subjects/{quote(subject, safe='')}/versions/latest")
            rows.append({"subject": subject, "version": latest["version"], "id": latest["id"],
                         "type": latest.get("schemaType", "AVRO")})  # fmt: skip
        return json_response({"compatibility": await _level(None), "subjects": rows})

    async def subject(request: Request) -> Response:
        name = request.path_params["subject"]
        path = f"/subjects/{quote(name, safe='')}/versions"
        versions = [await _get(f"{path}/{n}") for n in await _get(path)]
        by_number = {v["version"]: v["schema"] for v in versions}
        try:
            old = int(request.query_params.get("from", min(by_number)))
            new = int(request.query_params.get("to", max(by_number)))
        except ValueError:
            raise RestError(400, 400, "from and to are version numbers") from None
        if old not in by_number or new not in by_number:
            raise RestError(404, 40402, f"Subject '{name}' has no version {old} or {new}.")
        return json_response({
            "subject": name,
            "compatibility": await _level(name),
            "versions": [{"version": v["version"], "id": v["id"], "schema": v["schema"],
                          "type": v.get("schemaType", "AVRO")} for v in versions],
            "diff": {"from": old, "to": new, "lines": schema_diff(by_number[old], by_number[new])},
        })  # fmt: skip

    base = "/api/console"
    return [
        Route(f"{base}/schemas", subjects),
        Route(f"{base}/schemas/{{subject}}", subject),
    ]
