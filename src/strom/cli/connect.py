"""``strom connect``: run a Kafka Connect worker (distributed mode, Kafka Connect's REST API)
whose configs, offsets and status are topics of the strom cluster at ``--bootstrap-server``,
and whose connectors run as Spark Structured Streaming queries."""

from __future__ import annotations

from strom.cli.service import ServiceOptions, serve, service_command

__all__ = ["connect"]


@service_command(
    "connect",
    listener="Where to serve the REST API (listeners).  [default: localhost:8083]",
    override="Any worker setting by its Kafka Connect name (see docs/connect.md); repeatable.",
    spark="connectors",
)
def connect(options: ServiceOptions) -> None:
    """Run a Kafka Connect worker on strom and Spark (settings: PROPERTIES_FILE, as Kafka's
    connect-distributed.properties, then --override, then the options)."""
    from strom.connect.settings import WorkerSettings  # noqa: PLC0415
    from strom.connect.worker import ConnectWorker  # noqa: PLC0415

    values = options.settings()
    serve("connect", lambda: ConnectWorker(WorkerSettings.from_properties(values)))
