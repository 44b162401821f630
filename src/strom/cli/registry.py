"""``strom registry``: run a schema registry instance (Confluent's REST API) whose state is the
``_schemas`` topic of the strom cluster at ``--bootstrap-server`` (or ``--bootstrap-servers``).
Start several with the same topic and group for a highly available registry: one is elected
primary, the others forward writes to it."""

from __future__ import annotations

import click

from strom.cli.service import ServiceOptions, serve, service_command

__all__ = ["registry"]


@service_command(
    "registry",
    bootstrap="The strom cluster holding _schemas (kafkastore.bootstrap.servers).",
    listener="Where to serve the REST API (listeners).  [default: localhost:8081]",
    override="Any registry setting by its Confluent name (see docs/registry.md); repeatable.",
)
def registry(options: ServiceOptions) -> None:
    """Run a Confluent-compatible schema registry on strom (settings: PROPERTIES_FILE, then
    --override, then the options)."""
    from strom.registry.server import RegistryServer, RegistrySettings  # noqa: PLC0415

    values = options.settings(
        bootstrap_key="kafkastore.bootstrap.servers", https_with="ssl.keystore.location"
    )
    if "kafkastore.bootstrap.servers" not in values:
        raise click.UsageError("give --bootstrap-server (or kafkastore.bootstrap.servers)")
    serve("registry", lambda: RegistryServer(RegistrySettings.from_properties(values)))
