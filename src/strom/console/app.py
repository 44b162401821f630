"""The console's server: the page and its assets, the console's API (with the Schemas and
Connectors pages', over the services given), and the REST proxy's API
the page also calls, on one listener (the proxy's settings: TLS, basic authentication with
principal propagation, the clients' security)."""

from __future__ import annotations

from pathlib import Path
from typing import Final

from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Route

from strom.console.api import console_api
from strom.console.connectors import connector_routes
from strom.console.metrics import metrics_routes
from strom.console.registry import registry_routes
from strom.console.services import Services
from strom.rest.app import RestProxy
from strom.rest.context import ProxyContext
from strom.rest.errors import not_found
from strom.rest.settings import RestSettings
from strom.web.http import json_response

__all__ = ["DEFAULT_LISTENER", "Console", "page_routes"]

DEFAULT_LISTENER: Final = "http://localhost:9021"
ASSETS: Final = Path(__file__).parent / "assets"
_MEDIA_TYPES: Final = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
}


async def _index(request: Request) -> Response:
    return FileResponse(ASSETS / "index.html", media_type=_MEDIA_TYPES[".html"])


async def _asset(request: Request) -> Response:
    name = request.path_params["name"]
    path = ASSETS / name
    if "/" in name or path.suffix not in _MEDIA_TYPES or not path.is_file():
        raise not_found(f"No asset {name}.")
    return FileResponse(path, media_type=_MEDIA_TYPES[path.suffix])


def page_routes(context: ProxyContext, services: Services) -> list[BaseRoute]:
    async def features(request: Request) -> Response:
        """Which of the pages for services beside strom to show."""
        return json_response({"schemas": services.registry is not None,
                              "connectors": services.connect is not None,
                              "metrics": bool(services.metrics)})  # fmt: skip

    return [
        Route("/", _index),
        Route("/assets/{name}", _asset),
        Route("/api/console/features", features),
        *console_api(context),
        *registry_routes(services.registry),
        *connector_routes(services.connect),
        *metrics_routes(services.metrics),
    ]


class Console(RestProxy):
    """A started console: ``url`` is where its page is."""

    def __init__(self, settings: RestSettings, services: Services | None = None) -> None:
        given = services or Services(registry=settings.schema_registry_url)
        super().__init__(
            settings, extra_routes=lambda context: page_routes(context, given), name="console-http"
        )
