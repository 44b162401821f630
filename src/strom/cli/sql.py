"""``strom sql``: run a SQL server (ksqlDB's language and REST API) whose command topic is on
the strom cluster at ``--bootstrap-server`` and whose queries run as Spark Structured Streaming
queries; ``strom sql shell`` and ``strom sql run`` are its clients (``sql_shell``)."""

from __future__ import annotations

from typing import Any, cast

import click

from strom.cli.service import ServiceOptions, serve, service_command
from strom.cli.sql_shell import run, shell

__all__ = ["sql"]

_CLIENT = "strom.sql.client"


class _ServerOrClient(click.Group):
    """`strom sql [PROPERTIES_FILE] [OPTIONS]` runs the server; `strom sql shell|run ...` runs a
    client of one, with arguments of its own (a plain group would read `shell` as the file)."""

    allow_interspersed_args = True  # the server's options after PROPERTIES_FILE, as before

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] in self.commands:
            ctx.meta[_CLIENT] = args
            return click.Command.parse_args(self, ctx, [])
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        client = ctx.meta.pop(_CLIENT, None)
        if client is None:
            return super().invoke(ctx)
        name, *args = client
        command = self.commands[name]
        # No parent: the client's usage line is not the server's ("strom sql shell [OPTIONS]").
        with command.make_context(
            f"{ctx.command_path} {name}",
            args,
            help_option_names=ctx.help_option_names,
            max_content_width=ctx.max_content_width,
        ) as client_ctx:
            return command.invoke(client_ctx)


@service_command(
    "sql",
    listener="Where to serve the REST API (listeners).  [default: localhost:8088]",
    override="Any server setting by its ksqlDB name (see docs/sql.md); repeatable.",
    spark="queries",
    group=_ServerOrClient,
)
def sql(options: ServiceOptions) -> None:
    """Run a SQL server on strom and Spark (settings: PROPERTIES_FILE, as ksqlDB's
    ksql-server.properties, then --override, then the options). `strom sql shell` and
    `strom sql run FILE.sql` are its clients."""
    from strom.sql.server import SqlServer  # noqa: PLC0415
    from strom.sql.settings import SqlSettings  # noqa: PLC0415

    values = options.settings()
    serve("sql", lambda: SqlServer(SqlSettings.from_properties(values)))


cast(click.Group, sql).add_command(shell)
cast(click.Group, sql).add_command(run)
