"""``strom connect``: run a Kafka Connect worker (distributed mode, Kafka Connect's REST API)
whose configs, offsets and status are topics of the strom cluster at ``--bootstrap-server``,
and whose connectors run as Spark Structured Streaming queries."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import click

from strom.config import load_properties

__all__ = ["connect"]

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def pairs(values: tuple[str, ...], option: str) -> dict[str, str]:
    found = {}
    for value in values:
        name, sep, setting = value.partition("=")
        if not sep:
            raise click.BadParameter(f"expected NAME=VALUE, got {value!r}", param_hint=option)
        found[name.strip()] = setting.strip()
    return found


@click.command("connect")
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
    help="Where to serve the REST API (listeners).  [default: localhost:8083]",
)
@click.option(
    "--master",
    metavar="URL",
    default=None,
    help="The Spark master the connectors run on (spark.master).  [default: local[*]]",
)
@click.option(
    "--conf",
    "confs",
    metavar="spark.NAME=VALUE",
    multiple=True,
    help="A Spark setting of the connectors' session; repeatable.",
)
@click.option(
    "--override",
    "overrides",
    metavar="NAME=VALUE",
    multiple=True,
    help="Any worker setting by its Kafka Connect name (see docs/connect.md); repeatable.",
)
def connect(
    *,
    properties_file: Path | None,
    bootstrap_servers: str | None,
    listener: str | None,
    master: str | None,
    confs: tuple[str, ...],
    overrides: tuple[str, ...],
) -> None:
    """Run a Kafka Connect worker on strom and Spark (settings: PROPERTIES_FILE, as Kafka's
    connect-distributed.properties, then --override, then the options)."""
    from strom.connect.settings import WorkerSettings  # noqa: PLC0415
    from strom.connect.worker import ConnectWorker  # noqa: PLC0415

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
        worker = ConnectWorker(WorkerSettings.from_properties(values))
    except (ValueError, OSError) as error:
        click.echo(f"strom connect: {error}", err=True)
        sys.exit(1)
    try:
        worker.serve_forever()
    except KeyboardInterrupt:
        sys.exit(130)
