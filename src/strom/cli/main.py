"""The ``strom`` command: one click group; each subcommand lives in its own module."""

from __future__ import annotations

import click

from strom import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="strom")
def cli() -> None:
    """strom: an Apache Kafka-compatible event streaming platform."""


def main() -> None:
    cli()
