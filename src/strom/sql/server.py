"""Running one SQL server: its engine (the command topic and the queries' Spark session) and
its REST listener, in the calling thread or a thread of its own."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from strom.sql.engine import Engine
from strom.sql.rest import create_app
from strom.sql.settings import SqlSettings
from strom.web.http import BasicAuth
from strom.web.server import HttpServer

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["SqlServer"]

log = logging.getLogger(__name__)


def _local_spark(settings: SqlSettings) -> Callable[[], SparkSession]:
    def start() -> SparkSession:
        import strom.spark  # noqa: PLC0415

        return strom.spark.session(
            master=settings.spark_master,
            app_name=f"strom-sql-{settings.service_id}",
            conf=dict(settings.spark_conf),
        )

    return start


class SqlServer:
    """A server: `url` is where its REST API answers. `spark` makes the SparkSession its
    queries run in (default: `strom.spark.session` with the settings' master and conf), called
    once, when the first query is planned."""

    def __init__(
        self, settings: SqlSettings, *, spark: Callable[[], SparkSession] | None = None
    ) -> None:
        self.settings = settings
        security = settings.listener_security
        auth = BasicAuth.of(security)
        self._http = HttpServer(
            settings.listener, ssl_context=security.ssl_context(), name="sql-http"
        )
        self.url = self._http.url
        self.engine = Engine(settings, spark=spark or _local_spark(settings))
        self._app = create_app(self.engine, auth=auth)

    def start(self) -> None:
        """Replay the command topic and listen, in a thread."""
        self.engine.start()
        self._http.start(self._app)

    def serve_forever(self) -> None:
        """Start and serve in the calling thread until interrupted."""
        self.engine.start()
        log.info("ready: ksqlDB's REST API on %s", self.url)
        try:
            self._http.serve(self._app)
        finally:
            self.engine.stop()

    def stop(self) -> None:
        self._http.stop()
        self.engine.stop()
