"""``strom console``: run the web console for the strom cluster at ``--bootstrap-server``."""

from __future__ import annotations

import click

from strom.cli.service import ServiceOptions, serve, service_command

__all__ = ["console"]


@service_command(
    "console",
    listener="Where to serve the console (listeners).  [default: localhost:9021]",
    override="Any setting by its REST proxy name (see docs/console.md); repeatable.",
    urls={
        "registry": (
            "schema.registry.url",
            "A schema registry: its subjects on the Schemas page (schema.registry.url).",
        ),
        "connect": (
            "console.connect.url",
            "A Kafka Connect cluster: its connectors on the Connectors page.",
        ),
        "sql": (
            "console.sql.url",
            "A SQL server (strom sql, or ksqlDB): its queries, streams and tables on the SQL page.",
        ),
        "metrics": (
            "console.metrics.urls",
            "The nodes' metrics (comma-separated /metrics URLs): throughput and latency charts.",
        ),
    },
)
def console(options: ServiceOptions) -> None:
    """Run strom's web console (settings: PROPERTIES_FILE, with the REST proxy's names, then
    --override, then the options)."""
    from strom.console.app import DEFAULT_LISTENER, Console  # noqa: PLC0415
    from strom.console.services import Services  # noqa: PLC0415
    from strom.rest.settings import RestSettings  # noqa: PLC0415

    values = options.settings(defaults={"listeners": DEFAULT_LISTENER})

    def start() -> Console:
        started = Console(RestSettings.from_properties(values), Services.from_properties(values))
        click.echo(f"strom console on {started.url}", err=True)
        return started

    serve("console", start)
