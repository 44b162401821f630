"""The console's server: the page and its assets, the console's API (with the Schemas,
Connectors and SQL pages', over the services given), and the REST proxy's API
the page also calls, on one listener (the proxy's settings: TLS, basic authentication with
principal propagation, the clients' security), behind a login page when users are configured."""

from __future__ import annotations

from pathlib import Path
from typing import Final

from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Route

from strom.console.api import console_api
from strom.console.connectors import connector_routes
from strom.console.login import LoginPages
from strom.console.metrics import metrics_routes
from strom.console.registry import registry_routes
from strom.console.services import Services
from strom.console.sql import sql_routes
from strom.rest.app import RestProxy
from strom.rest.context import ProxyContext
from strom.rest.errors import not_found
from strom.rest.settings import RestSettings
from strom.web.http import BasicAuth, json_response

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


def page_routes(
    context: ProxyContext, services: Services, *, login: bool = False
) -> list[BaseRoute]:
    async def features(request: Request) -> Response:
        """Which of the pages for services beside strom to show, and whether to offer a
        logout."""
        return json_response({"schemas": services.registry is not None,
                              "connectors": services.connect is not None,
                              "sql": services.sql is not None,
                              "metrics": bool(services.metrics), "login": login})  # fmt: skip

    return [
        Route("/", _index),
        Route("/assets/{name}", _asset),
        Route("/api/console/features", features),
        *console_api(context),
        *registry_routes(services.registry),
        *connector_routes(services.connect),
        *sql_routes(services.sql),
        *metrics_routes(services.metrics),
    ]


class Console(RestProxy):
    """A started console: ``url`` is where its page is. With basic authentication's users
    configured, a login page stands in front of it (``LoginPages``)."""

    def __init__(self, settings: RestSettings, services: Services | None = None) -> None:
        given = services or Services(registry=settings.schema_registry_url)
        auth = BasicAuth.of(settings.security)
        super().__init__(
            settings,
            extra_routes=lambda context: page_routes(context, given, login=auth is not None),
            name="console-http",
        )
        if auth is not None:
            secure = settings.listener.scheme == "https"
            self._app = LoginPages(self._app, auth=auth, secure=secure)
