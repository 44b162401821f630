"""The ``strom`` command: one click group; each subcommand lives in its own module."""

from __future__ import annotations

import click

from strom import __version__
from strom.cli.configs import configs
from strom.cli.consume import consume
from strom.cli.groups import groups
from strom.cli.perf import perf
from strom.cli.produce import produce
from strom.cli.server import server
from strom.cli.topics import topics


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="strom")
def cli() -> None:
    """strom: an Apache Kafka-compatible event streaming platform."""


cli.add_command(server)
cli.add_command(topics)
cli.add_command(configs)
cli.add_command(produce)
cli.add_command(consume)
cli.add_command(groups)
cli.add_command(perf)


def main() -> None:
    cli()
