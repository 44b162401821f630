"""What the service commands (``strom registry``, ``connect``, ``sql``, ``rest``, ``console``)
share: their options (PROPERTIES_FILE, ``--bootstrap-server``, ``--listener``, ``--override``
and, on Spark, ``--master`` and ``--conf``), the settings those make, and the run until Ctrl-C."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import update_wrapper
from pathlib import Path
from typing import Any, Protocol

import click

from strom.config import ConfigError, load_properties

__all__ = ["ServiceOptions", "pairs", "serve", "service_command"]

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def pairs(values: tuple[str, ...], option: str) -> dict[str, str]:
    """``NAME=VALUE`` strings as a dict; one without ``=`` is a usage error of ``option``."""
    found = {}
    for value in values:
        name, sep, setting = value.partition("=")
        if not sep:
            raise click.BadParameter(f"expected NAME=VALUE, got {value!r}", param_hint=option)
        found[name.strip()] = setting.strip()
    return found


@dataclass(frozen=True)
class ServiceOptions:
    """A service command's options as given (``None`` or empty: not given)."""

    properties_file: Path | None
    bootstrap_servers: str | None
    listener: str | None
    overrides: tuple[str, ...]
    master: str | None = None
    confs: tuple[str, ...] = ()
    named: tuple[tuple[str, str | None], ...] = ()
    """The settings that options of the command's own set (``(setting, value)``)."""

    def settings(
        self,
        *,
        defaults: Mapping[str, str] | None = None,
        bootstrap_key: str = "bootstrap.servers",
        https_with: str | None = None,
    ) -> dict[str, str]:
        """``defaults``, then PROPERTIES_FILE, then ``--override``, then ``--conf``, then the
        options; ``--bootstrap-server`` sets ``bootstrap_key``, and ``--listener`` is https when
        the setting ``https_with`` is set."""
        values = dict(defaults or {})
        if self.properties_file:
            try:
                values.update(load_properties(self.properties_file))
            except ConfigError as error:
                raise click.BadParameter(str(error), param_hint="PROPERTIES_FILE") from None
        values.update(pairs(self.overrides, "--override"))
        spark = pairs(self.confs, "--conf")
        if bad := [name for name in spark if not name.startswith("spark.")]:
            raise click.BadParameter(f"not a Spark setting: {bad[0]}", param_hint="--conf")
        values.update(spark)
        values.update((name, value) for name, value in self.named if value is not None)
        if self.bootstrap_servers is not None:
            values[bootstrap_key] = self.bootstrap_servers
        if self.listener is not None:
            scheme = "https" if https_with and values.get(https_with) else "http"
            values["listeners"] = f"{scheme}://{self.listener}"
        if self.master is not None:
            values["spark.master"] = self.master
        return values


def service_command(
    name: str,
    *,
    listener: str,
    override: str,
    bootstrap: str = "The strom cluster (bootstrap.servers).",
    spark: str | None = None,
    group: type[click.Group] | None = None,
    urls: Mapping[str, tuple[str, str]] | None = None,
) -> Callable[[Callable[[ServiceOptions], None]], click.Command]:
    """``strom NAME``, whose body takes the shared options as one ``ServiceOptions``: the
    arguments are the options' help texts, ``spark`` (what runs on Spark, as "queries")
    adds ``--master`` and ``--conf``, ``group`` makes it a group of that class whose body
    runs when no subcommand is given, and ``urls`` adds ``--NAME URL`` options, each setting
    one setting (``{NAME: (setting, help)}``)."""
    options = [
        click.argument(
            "properties_file", required=False, type=click.Path(dir_okay=False, path_type=Path)
        ),
        click.option(
            "--bootstrap-server",
            "--bootstrap-servers",
            "bootstrap_servers",
            metavar="HOST:PORT",
            default=None,
            help=bootstrap,
        ),
        click.option("--listener", metavar="HOST:PORT", default=None, help=listener),
    ]
    if spark is not None:
        options += [
            click.option(
                "--master",
                metavar="URL",
                default=None,
                help=f"The Spark master the {spark} run on (spark.master).  [default: local[*]]",
            ),
            click.option(
                "--conf",
                "confs",
                metavar="spark.NAME=VALUE",
                multiple=True,
                help=f"A Spark setting of the {spark}' session; repeatable.",
            ),
        ]
    urls = dict(urls or {})
    options += [
        click.option(f"--{flag}", flag, metavar="URL", default=None, help=text)
        for flag, (_, text) in urls.items()
    ]
    options.append(
        click.option("--override", "overrides", metavar="NAME=VALUE", multiple=True, help=override)
    )

    def decorate(body: Callable[[ServiceOptions], None]) -> click.Command:
        def run(**given: Any) -> None:
            logging.basicConfig(level=logging.INFO, format=LOG_FORMAT, stream=sys.stderr)
            named = tuple((setting, given.pop(flag)) for flag, (setting, _) in urls.items())
            body(ServiceOptions(**given, named=named))

        command: Callable[..., None] = update_wrapper(run, body)
        for option in reversed(options):
            command = option(command)
        if group is not None:
            return click.group(name, cls=group, invoke_without_command=True)(command)
        return click.command(name)(command)

    return decorate


class Server(Protocol):
    def serve_forever(self) -> None: ...


def serve(name: str, start: Callable[[], Server]) -> None:
    """Serve what ``start`` makes until Ctrl-C (exit status 130); a ValueError or OSError from
    ``start`` (bad settings, a port in use) is one line and exit status 1."""
    try:
        server = start()
    except (ValueError, OSError) as error:
        click.echo(f"strom {name}: {error}", err=True)
        sys.exit(1)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        sys.exit(130)
