"""``strom sql``: run a SQL server (ksqlDB's language and REST API) whose command topic is on
the strom cluster at ``--bootstrap-server`` and whose queries run as Spark Structured Streaming
queries."""

from __future__ import annotations

from strom.cli.service import ServiceOptions, serve, service_command

__all__ = ["sql"]


@service_command(
    "sql",
    listener="Where to serve the REST API (listeners).  [default: localhost:8088]",
    override="Any server setting by its ksqlDB name (see docs/sql.md); repeatable.",
    spark="queries",
)
def sql(options: ServiceOptions) -> None:
    """Run a SQL server on strom and Spark (settings: PROPERTIES_FILE, as ksqlDB's
    ksql-server.properties, then --override, then the options)."""
    from strom.sql.server import SqlServer  # noqa: PLC0415
    from strom.sql.settings import SqlSettings  # noqa: PLC0415

    values = options.settings()
    serve("sql", lambda: SqlServer(SqlSettings.from_properties(values)))
