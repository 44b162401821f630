"""One proxy: its settings, Kafka clients, the v3 routes on the shared HTTP shell, and the
listener, in the calling thread or a thread of its own."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp

from strom.registry.codec import RegistryCodec
from strom.rest.context import ProxyContext
from strom.rest.errors import RestError
from strom.rest.gateway import KafkaClients
from strom.rest.settings import RestSettings
from strom.rest.v2 import v2_routes
from strom.rest.v2_consumers import ConsumerInstances, consumer_routes
from strom.rest.v3_acls import acl_routes
from strom.rest.v3_configs import config_routes
from strom.rest.v3_groups import group_routes
from strom.rest.v3_records import record_routes
from strom.rest.v3_topics import topic_routes
from strom.web.http import BasicAuth, json_response
from strom.web.http import create_app as web_app
from strom.web.server import HttpServer

__all__ = ["ExtraRoutes", "RestProxy", "create_app", "rest_error"]

log = logging.getLogger("strom.rest")
request_log = logging.getLogger("strom.rest.requests")


async def rest_error(request: Request, error: Exception) -> Response:
    """A ``RestError`` as the proxy's error body."""
    assert isinstance(error, RestError)
    return json_response({"error_code": error.error_code, "message": error.message}, error.status)


ExtraRoutes = Callable[[ProxyContext], Sequence[BaseRoute]]
"""Routes a service built on the proxy serves beside (and before) the proxy's own."""


async def _root(request: Request) -> Response:
    return json_response({})


def create_app(
    settings: RestSettings,
    clients: KafkaClients,
    consumers: ConsumerInstances,
    *,
    auth: BasicAuth | None = None,
    extra_routes: ExtraRoutes | None = None,
) -> Starlette:
    context = ProxyContext(settings, clients)
    registry = RegistryCodec(settings.schema_registry_url) if settings.schema_registry_url else None
    routes = [
        *(extra_routes(context) if extra_routes else ()),
        Route("/", _root),
        *topic_routes(context),
        *config_routes(context),
        *group_routes(context),
        *acl_routes(context),
        *record_routes(context, registry),
        *v2_routes(context, registry),
        *consumer_routes(context, consumers, registry),
    ]
    return web_app(
        routes,
        errors={RestError: rest_error},
        auth=auth,
        max_body_bytes=None,  # bodies are limited per request, and a stream per record
        log=request_log,
    )


class RestProxy:
    """A started proxy: ``url`` is where it answers. ``extra_routes``: the routes of a service
    served with the proxy (the console)."""

    def __init__(
        self,
        settings: RestSettings,
        *,
        extra_routes: ExtraRoutes | None = None,
        name: str = "rest-http",
    ) -> None:
        auth = BasicAuth.of(settings.security)
        tls = settings.security.ssl_context()
        settings.client_config()  # a client setting that cannot be used fails the start
        self._clients = KafkaClients(settings)
        self._consumers = ConsumerInstances(self._clients.config, settings.consumer_idle_ms)
        self._app: ASGIApp = create_app(
            settings, self._clients, self._consumers, auth=auth, extra_routes=extra_routes
        )
        self._http = HttpServer(settings.listener, ssl_context=tls, name=name)
        self.url = self._http.url

    def start(self) -> None:
        self._http.start(self._app)

    def serve_forever(self) -> None:
        log.info("ready: listening on %s", self.url)
        try:
            self._http.serve(self._app)
        finally:
            self._consumers.close()
            self._clients.close()

    def stop(self) -> None:
        self._http.stop()
        self._consumers.close()
        self._clients.close()
