"""``strom schemas``: the schema registry's subjects, versions and compatibility settings over its
REST API (any Confluent-compatible registry). Answers print as JSON; a refusal prints the
registry's message and error code and exits 1."""

from __future__ import annotations

import json
import ssl
from pathlib import Path
from typing import Any

import click
import httpx

from strom.cli.client_common import CliError

__all__ = ["schemas"]

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
_TYPES = ("AVRO", "JSON", "PROTOBUF")


class _Registry:
    def __init__(self, url: str, user: str | None, ca_location: Path | None) -> None:
        self.url = url.rstrip("/")
        auth = None
        if user is not None:
            name, _, password = user.partition(":")
            auth = (name, password)
        verify = ssl.create_default_context(cafile=ca_location) if ca_location else True
        self._http = httpx.Client(
            headers={"Content-Type": CONTENT_TYPE}, auth=auth, verify=verify, timeout=30
        )

    def call(self, method: str, path: str, body: Any = None, **params: Any) -> Any:
        query = {name: str(value).lower() for name, value in params.items() if value}
        try:
            response = self._http.request(
                method,
                self.url + path,
                params=query,
                content=None if body is None else json.dumps(body),
            )
        except httpx.HTTPError as error:
            raise CliError(f"cannot reach the schema registry at {self.url}: {error}") from None
        try:
            answer = response.json()
        except ValueError:
            answer = response.text
        if response.status_code != 200:
            if isinstance(answer, dict) and "error_code" in answer:
                raise CliError(f"{answer.get('message')} (error_code {answer['error_code']})")
            raise CliError(f"HTTP {response.status_code}: {answer}")
        return answer


def _show(answer: Any) -> None:
    if isinstance(answer, list) and all(isinstance(item, str) for item in answer):
        for item in answer:
            click.echo(item)
    else:
        click.echo(json.dumps(answer, indent=2, ensure_ascii=False))


def _body(schema_file: Path, schema_type: str) -> dict[str, Any]:
    return {"schema": schema_file.read_text(), "schemaType": schema_type}


@click.group("schemas")
@click.option(
    "--registry",
    metavar="URL",
    envvar="STROM_REGISTRY",
    default="http://localhost:8081",
    show_default=True,
    help="The schema registry (or $STROM_REGISTRY).",
)
@click.option("--user", metavar="NAME:PASSWORD", default=None, help="HTTP basic credentials.")
@click.option(
    "--ca-location",
    metavar="PEM",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="The CA certificates that sign an https registry's certificate.",
)
@click.pass_context
def schemas(ctx: click.Context, registry: str, user: str | None, ca_location: Path | None) -> None:
    """List, read, register, check and delete schemas in a schema registry.

    \b
    Examples:
      strom schemas list
      strom schemas register orders-value --schema order.avsc
      strom schemas check orders-value --schema order-v2.avsc
      strom schemas get orders-value --version latest
      strom schemas config orders-value --set FULL
      strom schemas delete orders-value --permanent
    """
    ctx.obj = _Registry(registry, user, ca_location)


_schema_file = click.option(
    "--schema",
    "schema_file",
    required=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="The schema's file (for PROTOBUF: the base64 FileDescriptorProto).",
)
_schema_type = click.option(
    "--type", "schema_type", type=click.Choice(_TYPES), default="AVRO", show_default=True
)


@schemas.command("list")
@click.option("--deleted", is_flag=True, help="Include soft-deleted subjects.")
@click.option("--prefix", default="", help="Only subjects starting with this.")
@click.pass_obj
def list_subjects(registry: _Registry, deleted: bool, prefix: str) -> None:
    """Print the subjects, one per line."""
    _show(registry.call("GET", "/subjects", deleted=deleted, subjectPrefix=prefix))


@schemas.command("get")
@click.argument("subject", required=False)
@click.option("--version", default="latest", show_default=True, help="A version or 'latest'.")
@click.option("--id", "schema_id", type=int, default=None, help="A schema by its id instead.")
@click.option("--versions", "all_versions", is_flag=True, help="List the subject's versions.")
@click.pass_obj
def get(
    registry: _Registry,
    subject: str | None,
    version: str,
    schema_id: int | None,
    all_versions: bool,
) -> None:
    """Print a subject's version (or a schema by --id) as JSON."""
    if schema_id is not None:
        _show(registry.call("GET", f"/schemas/ids/{schema_id}"))
    elif subject is None:
        raise click.UsageError("give a SUBJECT or --id")
    elif all_versions:
        _show(registry.call("GET", f"/subjects/{subject}/versions"))
    else:
        _show(registry.call("GET", f"/subjects/{subject}/versions/{version}"))


@schemas.command("register")
@click.argument("subject")
@_schema_file
@_schema_type
@click.option("--normalize", is_flag=True, help="Register the schema's normalized form.")
@click.pass_obj
def register(
    registry: _Registry, subject: str, schema_file: Path, schema_type: str, normalize: bool
) -> None:
    """Register a schema under SUBJECT; print its id."""
    answer = registry.call(
        "POST",
        f"/subjects/{subject}/versions",
        _body(schema_file, schema_type),
        normalize=normalize,
    )
    click.echo(answer["id"])


@schemas.command("check")
@click.argument("subject")
@_schema_file
@_schema_type
@click.option(
    "--version", default=None, help="Check against this version only.  [default: as configured]"
)
@click.pass_obj
def check(
    registry: _Registry, subject: str, schema_file: Path, schema_type: str, version: str | None
) -> None:
    """Check a schema against SUBJECT's compatibility level; exit 1 if incompatible."""
    path = f"/compatibility/subjects/{subject}/versions" + (f"/{version}" if version else "")
    answer = registry.call("POST", path, _body(schema_file, schema_type), verbose=True)
    if answer["is_compatible"]:
        click.echo("compatible")
        return
    for message in answer.get("messages", []):
        click.echo(message)
    raise CliError("incompatible")


@schemas.command("delete")
@click.argument("subject")
@click.option("--version", default=None, help="Delete only this version.")
@click.option("--permanent", is_flag=True, help="Hard delete (after a soft delete).")
@click.pass_obj
def delete(registry: _Registry, subject: str, version: str | None, permanent: bool) -> None:
    """Soft-delete SUBJECT (or one --version); --permanent removes it for good."""
    path = f"/subjects/{subject}" + (f"/versions/{version}" if version else "")
    _show(registry.call("DELETE", path, permanent=permanent))


@schemas.command("config")
@click.argument("subject", required=False)
@click.option(
    "--set",
    "level",
    type=click.Choice(
        [
            "NONE",
            "BACKWARD",
            "BACKWARD_TRANSITIVE",
            "FORWARD",
            "FORWARD_TRANSITIVE",
            "FULL",
            "FULL_TRANSITIVE",
        ],
        case_sensitive=False,
    ),
    default=None,
    help="Set the compatibility level.",
)
@click.pass_obj
def config(registry: _Registry, subject: str | None, level: str | None) -> None:
    """Print (or --set) the compatibility level, global or of SUBJECT."""
    path = "/config" + (f"/{subject}" if subject else "")
    if level is not None:
        _show(registry.call("PUT", path, {"compatibility": level.upper()}))
    else:
        _show(registry.call("GET", path, defaultToGlobal=True))
