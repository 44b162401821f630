"""``strom rest``: run a REST proxy (Confluent REST Proxy's v3 API) in front of the strom
cluster at ``--bootstrap-server``."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import click

from strom.cli.connect import pairs
from strom.config import load_properties

__all__ = ["rest"]

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


@click.command("rest")
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
    help="Where to serve the API (listeners).  [default: localhost:8082]",
)
@click.option(
    "--override",
    "overrides",
    metavar="NAME=VALUE",
    multiple=True,
    help="Any proxy setting by its Confluent name (see docs/rest.md); repeatable.",
)
def rest(
    *,
    properties_file: Path | None,
    bootstrap_servers: str | None,
    listener: str | None,
    overrides: tuple[str, ...],
) -> None:
    """Run a REST proxy for strom (settings: PROPERTIES_FILE, as Confluent's
    kafka-rest.properties, then --override, then the options)."""
    from strom.rest.app import RestProxy  # noqa: PLC0415
    from strom.rest.settings import RestSettings  # noqa: PLC0415

    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT, stream=sys.stderr)
    values = dict(load_properties(properties_file)) if properties_file else {}
    values.update(pairs(overrides, "--override"))
    if bootstrap_servers is not None:
        values["bootstrap.servers"] = bootstrap_servers
    if listener is not None:
        values["listeners"] = f"http://{listener}"
    try:
        proxy = RestProxy(RestSettings.from_properties(values))
    except (ValueError, OSError) as error:
        click.echo(f"strom rest: {error}", err=True)
        sys.exit(1)
    try:
        proxy.serve_forever()
    except KeyboardInterrupt:
        sys.exit(130)
