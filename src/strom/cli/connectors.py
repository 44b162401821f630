"""``strom connectors``: a thin client of Kafka Connect's REST API (a ``strom connect`` worker,
or any Kafka Connect worker): list, create, describe, status, pause, resume, stop, restart,
delete, and the offsets of a connector (KIP-875)."""

from __future__ import annotations

import functools
import json
import ssl
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

__all__ = ["connectors"]

DEFAULT_URL = "http://localhost:8083"


class _Api:
    def __init__(self, url: str, user: str | None = None, ca_location: Path | None = None) -> None:
        import httpx  # noqa: PLC0415

        self.url = url.rstrip("/")
        auth = None
        if user is not None:
            name, _, password = user.partition(":")
            auth = (name, password)
        verify = ssl.create_default_context(cafile=ca_location) if ca_location else True
        self._http = httpx.Client(base_url=self.url, auth=auth, verify=verify, timeout=120)
        self._errors = httpx.HTTPError

    def call(self, method: str, path: str, body: Any = None, **params: Any) -> Any:
        """The answer's JSON (None when it has no body); an API error as one line."""
        try:
            answer = self._http.request(method, path, json=body, params=params)
        except self._errors as error:
            raise click.ClickException(
                f"cannot reach Kafka Connect at {self.url}: {error}"
            ) from None
        if answer.status_code >= 400:
            try:
                message = answer.json()["message"]
            except (ValueError, KeyError, TypeError):
                message = answer.text or f"HTTP {answer.status_code}"
            raise click.ClickException(message)
        return answer.json() if answer.content else None


def _show(value: Any) -> None:
    click.echo(json.dumps(value, indent=2))


def api_options(command: Callable[..., None]) -> Callable[..., None]:
    """``--url``, ``--user`` and ``--ca-location``, given to ``command`` as its ``api``."""

    @click.option(
        "--url",
        default=DEFAULT_URL,
        show_default=True,
        envvar="STROM_CONNECT_URL",
        help="The worker's REST API (or $STROM_CONNECT_URL).",
    )
    @click.option(
        "--user",
        metavar="NAME:PASSWORD",
        envvar="STROM_CONNECT_USER",
        help="HTTP basic credentials, for a worker with BasicAuthSecurityRestExtension"
        " (or $STROM_CONNECT_USER).",
    )
    @click.option(
        "--ca-location",
        type=click.Path(dir_okay=False, path_type=Path),
        help="CA certificate(s) (PEM) to verify an https:// worker with.",
    )
    @functools.wraps(command)
    def with_api(url: str, user: str | None, ca_location: Path | None, **given: Any) -> None:
        command(_Api(url, user, ca_location), **given)

    return with_api


@click.group("connectors")
def connectors() -> None:
    """Manage the connectors of a Kafka Connect worker through its REST API."""


@connectors.command("list")
@api_options
@click.option(
    "--expand",
    type=click.Choice(["status", "info"]),
    multiple=True,
    help="Show more, as the API's ?expand=.",
)
def list_(api: _Api, expand: tuple[str, ...]) -> None:
    """The connectors' names, one a line (with --expand: the API's JSON)."""
    if expand:
        _show(api.call("GET", "/connectors", expand=list(expand)))
        return
    for name in api.call("GET", "/connectors"):
        click.echo(name)


@connectors.command("create")
@api_options
@click.argument("name", required=False)
@click.option(
    "--config",
    "settings",
    metavar="NAME=VALUE",
    multiple=True,
    help="A connector setting; repeatable.",
)
@click.option(
    "--file",
    "config_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help='A JSON file: {"name": ..., "config": {...}} as POST /connectors takes, or a config.',
)
def create(
    api: _Api, *, name: str | None, settings: tuple[str, ...], config_file: Path | None
) -> None:
    """Create a connector from --config settings and/or a JSON --file."""
    config: dict[str, str] = {}
    if config_file is not None:
        try:
            loaded = json.loads(config_file.read_text())
        except (OSError, ValueError) as error:
            raise click.BadParameter(str(error), param_hint="--file") from None
        if isinstance(loaded, dict) and isinstance(loaded.get("config"), dict):
            name = name or loaded.get("name")
            loaded = loaded["config"]
        if not isinstance(loaded, dict):
            raise click.BadParameter("expected a JSON object", param_hint="--file")
        config.update({str(k): str(v) for k, v in loaded.items()})
    for setting in settings:
        key, sep, value = setting.partition("=")
        if not sep:
            raise click.BadParameter(f"expected NAME=VALUE, got {setting!r}", param_hint="--config")
        config[key.strip()] = value.strip()
    name = name or config.get("name")
    if not name:
        raise click.UsageError("give the connector's NAME (or a name in the config)")
    api.call("POST", "/connectors", {"name": name, "config": config})
    click.echo(f"Created connector {name}.")


@connectors.command("describe")
@api_options
@click.argument("name")
def describe(api: _Api, name: str) -> None:
    """The connector's config and tasks (GET /connectors/NAME)."""
    _show(api.call("GET", f"/connectors/{name}"))


@connectors.command("status")
@api_options
@click.argument("name")
def status(api: _Api, name: str) -> None:
    """The state of the connector and of each of its tasks, with failures' traces."""
    _show(api.call("GET", f"/connectors/{name}/status"))


def _state_change(verb: str, path: str, method: str = "PUT") -> Callable[..., None]:
    @api_options
    @click.argument("name")
    def command(api: _Api, name: str) -> None:
        api.call(method, f"/connectors/{name}{path}")
        click.echo(f"{verb} connector {name}.")

    return command


connectors.command("pause", help="Pause the connector (PUT /connectors/NAME/pause).")(
    _state_change("Paused", "/pause")
)
connectors.command("resume", help="Resume a paused or stopped connector.")(
    _state_change("Resumed", "/resume")
)
connectors.command("stop", help="Stop the connector and its tasks (KIP-875).")(
    _state_change("Stopped", "/stop")
)
connectors.command("delete", help="Delete the connector.")(_state_change("Deleted", "", "DELETE"))


@connectors.command("restart")
@api_options
@click.argument("name")
@click.option("--include-tasks", is_flag=True, help="Restart the tasks too.")
@click.option("--only-failed", is_flag=True, help="Restart only what failed.")
@click.option("--task", type=int, default=None, help="Restart this task only.")
def restart(api: _Api, name: str, include_tasks: bool, only_failed: bool, task: int | None) -> None:
    """Restart the connector (or one of its tasks)."""
    if task is not None:
        api.call("POST", f"/connectors/{name}/tasks/{task}/restart")
        click.echo(f"Restarted task {task} of connector {name}.")
        return
    params = {"includeTasks": str(include_tasks).lower(), "onlyFailed": str(only_failed).lower()}
    answer = api.call("POST", f"/connectors/{name}/restart", **params)
    if answer is not None:
        _show(answer)
    else:
        click.echo(f"Restarted connector {name}.")


@connectors.command("offsets")
@api_options
@click.argument("name")
@click.option("--reset", is_flag=True, help="Reset every offset of the (stopped) connector.")
@click.option(
    "--alter",
    "alter_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help='Set offsets from a JSON file {"offsets": [{"partition": ..., "offset": ...}]}.',
)
def offsets(api: _Api, name: str, reset: bool, alter_file: Path | None) -> None:
    """The connector's offsets; --reset or --alter change those of a stopped connector."""
    if reset and alter_file is not None:
        raise click.UsageError("give --reset or --alter, not both")
    if reset:
        click.echo(api.call("DELETE", f"/connectors/{name}/offsets")["message"])
    elif alter_file is not None:
        try:
            body = json.loads(alter_file.read_text())
        except (OSError, ValueError) as error:
            raise click.BadParameter(str(error), param_hint="--alter") from None
        click.echo(api.call("PATCH", f"/connectors/{name}/offsets", body)["message"])
    else:
        _show(api.call("GET", f"/connectors/{name}/offsets"))
