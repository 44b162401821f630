"""``strom sql``: run a SQL server (ksqlDB's language and REST API) whose command topic is on
the strom cluster at ``--bootstrap-server`` and whose queries run as Spark Structured Streaming
queries."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import click

from strom.cli.connect import LOG_FORMAT, pairs
from strom.config import load_properties

__all__ = ["sql"]


@click.command("sql")
@click.argument("properties_file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--bootstrap-server",
    "--bootstrap-servers",
    "bootstrap_servers",
    metavar="HOST:PORT",
    default=None,
    help="The strom cluster (bootstrap.servers).",
)
@click.option(
    "--listener",
    metavar="HOST:PORT",
    default=None,
    help="Where to serve the REST API (listeners).  [default: localhost:8088]",
)
@click.option(
    "--master",
    metavar="URL",
    default=None,
    help="The Spark master the queries run on (spark.master).  [default: local[*]]",
)
@click.option(
    "--conf",
    "confs",
    metavar="spark.NAME=VALUE",
    multiple=True,
    help="A Spark setting of the queries' session; repeatable.",
)
@click.option(
    "--override",
    "overrides",
    metavar="NAME=VALUE",
    multiple=True,
    help="Any server setting by its ksqlDB name (see docs/sql.md); repeatable.",
)
def sql(
    *,
    properties_file: Path | None,
    bootstrap_servers: str | None,
    listener: str | None,
    master: str | None,
    confs: tuple[str, ...],
    overrides: tuple[str, ...],
) -> None:
    """Run a SQL server on strom and Spark (settings: PROPERTIES_FILE, as ksqlDB's
    ksql-server.properties, then --override, then the options)."""
    from strom.sql.server import SqlServer  # noqa: PLC0415
    from strom.sql.settings import SqlSettings  # noqa: PLC0415

    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT, stream=sys.stderr)
    values = dict(load_properties(properties_file)) if properties_file else {}
    values.update(pairs(overrides, "--override"))
    spark = pairs(confs, "--conf")
    if bad := [name for name in spark if not name.startswith("spark.")]:
        raise click.BadParameter(f"not a Spark setting: {bad[0]}", param_hint="--conf")
    values.update(spark)
    if bootstrap_servers is not None:
        values["bootstrap.servers"] = bootstrap_servers
    if listener is not None:
        values["listeners"] = f"http://{listener}"
    if master is not None:
        values["spark.master"] = master
    try:
        server = SqlServer(SqlSettings.from_properties(values))
    except (ValueError, OSError) as error:
        click.echo(f"strom sql: {error}", err=True)
        sys.exit(1)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        sys.exit(130)
