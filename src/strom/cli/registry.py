"""``strom registry``: run a schema registry instance (Confluent's REST API) whose state is the
``_schemas`` topic of the strom cluster at ``--bootstrap-server`` (or ``--bootstrap-servers``).
Start several with the same topic and group for a highly available registry: one is elected
primary, the others forward writes to it."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import click

from strom.config import load_properties

__all__ = ["registry"]

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


@click.command("registry")
@click.argument("properties_file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--bootstrap-server",
    "--bootstrap-servers",
    "bootstrap_servers",
    metavar="HOST:PORT",
    default=None,
    help="The strom cluster holding _schemas (kafkastore.bootstrap.servers).",
)
@click.option(
    "--listener",
    metavar="HOST:PORT",
    default=None,
    help="Where to serve the REST API (listeners).  [default: localhost:8081]",
)
@click.option(
    "--override",
    "overrides",
    metavar="NAME=VALUE",
    multiple=True,
    help="Any registry setting by its Confluent name (see docs/registry.md); repeatable.",
)
def registry(
    properties_file: Path | None,
    bootstrap_servers: str | None,
    listener: str | None,
    overrides: tuple[str, ...],
) -> None:
    """Run a Confluent-compatible schema registry on strom (settings: PROPERTIES_FILE, then
    --override, then the options)."""
    from strom.registry.server import RegistryServer, RegistrySettings  # noqa: PLC0415

    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT, stream=sys.stderr)
    values = dict(load_properties(properties_file)) if properties_file else {}
    for override in overrides:
        name, sep, value = override.partition("=")
        if not sep:
            raise click.BadParameter(
                f"expected NAME=VALUE, got {override!r}", param_hint="--override"
            )
        values[name.strip()] = value.strip()
    if bootstrap_servers is not None:
        values["kafkastore.bootstrap.servers"] = bootstrap_servers
    if listener is not None:
        scheme = "https" if values.get("ssl.keystore.location") else "http"
        values["listeners"] = f"{scheme}://{listener}"
    if "kafkastore.bootstrap.servers" not in values:
        raise click.UsageError("give --bootstrap-server (or kafkastore.bootstrap.servers)")
    try:
        settings = RegistrySettings.from_properties(values)
        server = RegistryServer(settings)
    except (ValueError, OSError) as error:
        click.echo(f"strom registry: {error}", err=True)
        sys.exit(1)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        sys.exit(130)
