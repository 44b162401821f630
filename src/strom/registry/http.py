"""The registry's responses: Confluent's content type on every JSON body (the HTTP shell,
``strom.web``, does authentication, limits, the request log and the error bodies)."""

from __future__ import annotations

import logging

from starlette.responses import Response

from strom.web.http import json_response

__all__ = ["CONTENT_TYPE", "raw_response", "registry_response", "request_log"]

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
request_log = logging.getLogger("strom.registry.requests")


def registry_response(body: object, status: int = 200) -> Response:
    return json_response(body, status, media_type=CONTENT_TYPE)


def raw_response(text: str) -> Response:
    """A schema's own text as the body (the ``/schema`` endpoints)."""
    return Response(text, 200, media_type=CONTENT_TYPE)
