"""``strom rest``: run a REST proxy (Confluent REST Proxy's v3 API) in front of the strom
cluster at ``--bootstrap-server``."""

from __future__ import annotations

from strom.cli.service import ServiceOptions, serve, service_command

__all__ = ["rest"]


@service_command(
    "rest",
    listener="Where to serve the API (listeners).  [default: localhost:8082]",
    override="Any proxy setting by its Confluent name (see docs/rest.md); repeatable.",
)
def rest(options: ServiceOptions) -> None:
    """Run a REST proxy for strom (settings: PROPERTIES_FILE, as Confluent's
    kafka-rest.properties, then --override, then the options)."""
    from strom.rest.app import RestProxy  # noqa: PLC0415
    from strom.rest.settings import RestSettings  # noqa: PLC0415

    values = options.settings()
    serve("rest", lambda: RestProxy(RestSettings.from_properties(values)))
