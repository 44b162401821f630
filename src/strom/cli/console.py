"""``strom console``: run the web console for the strom cluster at ``--bootstrap-server``."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import click

from strom.cli.connect import pairs
from strom.config import load_properties

__all__ = ["console"]

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


@click.command("console")
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
    help="Where to serve the console (listeners).  [default: localhost:9021]",
)
@click.option(
    "--override",
    "overrides",
    metavar="NAME=VALUE",
    multiple=True,
    help="Any setting by its REST proxy name (see docs/console.md); repeatable.",
)
def console(
    *,
    properties_file: Path | None,
    bootstrap_servers: str | None,
    listener: str | None,
    overrides: tuple[str, ...],
) -> None:
    """Run strom's web console (settings: PROPERTIES_FILE, with the REST proxy's names, then
    --override, then the options)."""
    from strom.console.app import DEFAULT_LISTENER, Console  # noqa: PLC0415
    from strom.rest.settings import RestSettings  # noqa: PLC0415

    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT, stream=sys.stderr)
    values = {"listeners": DEFAULT_LISTENER}
    if properties_file:
        values.update(load_properties(properties_file))
    values.update(pairs(overrides, "--override"))
    if bootstrap_servers is not None:
        values["bootstrap.servers"] = bootstrap_servers
    if listener is not None:
        values["listeners"] = f"http://{listener}"
    try:
        started = Console(RestSettings.from_properties(values))
    except (ValueError, OSError) as error:
        click.echo(f"strom console: {error}", err=True)
        sys.exit(1)
    click.echo(f"strom console on {started.url}", err=True)
    try:
        started.serve_forever()
    except KeyboardInterrupt:
        sys.exit(130)
