"""Running one Connect worker: its herder (the internal topics and the connectors' Spark
queries), its membership of the group and its REST listener, in the calling thread or threads
of their own."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from strom.connect.herder import Herder
from strom.connect.membership import Membership
from strom.connect.rest import create_app
from strom.connect.settings import WorkerSettings
from strom.web.http import BasicAuth
from strom.web.security import jaas_users, listener_ssl_context
from strom.web.server import HttpServer

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["ConnectWorker"]

log = logging.getLogger(__name__)

REALM = "KafkaConnect"
"""The JAAS section ``BasicAuthSecurityRestExtension`` logs in with."""
REFUSED = "User cannot access the resource."
"""Kafka Connect's 401 body (plain text)."""


def _basic_auth(settings: WorkerSettings) -> BasicAuth | None:
    """The REST API's basic authentication, when ``rest.extension.classes`` names it; none
    with an empty password file (Connect then lets every request in, with a warning)."""
    if settings.rest_jaas_config is None:
        return None
    users = jaas_users(settings.rest_jaas_config, REALM)
    if not users:
        log.warning("the password file of %s is empty: every request is let in", REALM)
        return None
    return BasicAuth(REALM, users, plain_refusal=REFUSED)


def _local_spark(settings: WorkerSettings) -> Callable[[], SparkSession]:
    def start() -> SparkSession:
        import strom.spark  # noqa: PLC0415

        return strom.spark.session(
            master=settings.spark_master,
            app_name=f"strom-connect-{settings.group_id}",
            conf=dict(settings.spark_conf),
        )

    return start


class ConnectWorker:
    """A worker: ``url`` is where its REST API answers. ``spark`` makes the SparkSession the
    connectors run in (default: ``strom.spark.session`` with the settings' master and conf),
    called once, when the first connector starts."""

    def __init__(
        self, settings: WorkerSettings, *, spark: Callable[[], SparkSession] | None = None
    ) -> None:
        self.settings = settings
        context = listener_ssl_context(settings.listener_tls) if settings.listener_tls else None
        self._http = HttpServer(
            settings.listener,
            ssl_context=context,
            advertised_url=settings.advertised_url,
            name="connect-http",
        )
        self.url = self._http.url
        self.herder = Herder(
            settings,
            worker_id=self.url.partition("://")[2],
            spark=spark or _local_spark(settings),
        )
        self.membership = Membership(settings, self.herder, url=self.url)
        self._app = create_app(self.herder, auth=_basic_auth(settings))

    def start(self) -> None:
        """Read the internal topics, listen, join the group and run what it assigns, in
        threads of their own."""
        self.herder.start(group=True)
        self._http.start(self._app)
        self.membership.start()

    def serve_forever(self) -> None:
        """Start and serve in the calling thread until interrupted."""
        self.herder.start(warm_up=True, group=True)
        self.membership.start()
        log.info("ready: Kafka Connect REST API on %s", self.url)
        try:
            self._http.serve(self._app)
        finally:
            self._leave()

    def stop(self) -> None:
        self._http.stop()
        self._leave()

    def _leave(self) -> None:
        self.membership.stop()  # stops the connectors, then leaves the group
        self.herder.stop()
