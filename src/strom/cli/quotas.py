"""``strom configs --entity-type users|clients``: client quotas, as kafka-configs.sh describes
and alters them (DescribeClientQuotas, AlterClientQuotas over strom's own client, which no
client library exposes).

An entity is a user, a client id, or both (``--user``/``--client``); ``--entity-default``,
``--user-defaults`` and ``--client-defaults`` name the default entity of that type.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import click

from strom.cli.client_common import CliError

__all__ = ["QuotaEntity", "alter_quotas", "describe_quotas", "quota_entity_of"]

QuotaEntity = tuple[tuple[str, str | None], ...]
"""(``user`` or ``client-id``, name or None for the default)."""

# The requests go over strom's own client (kio), imported when a quota command runs: the other
# ``configs`` commands, and ``topics`` and ``produce`` that import this module, start faster.

_TYPES = {"users": "user", "clients": "client-id"}
_LABELS = {"user": "user-principal", "client-id": "client-id"}
_MATCH_EXACT, _MATCH_DEFAULT = 0, 1


def quota_entity_of(
    *,
    entity_type: str | None,
    entity_name: str | None,
    entity_default: bool,
    user: str | None,
    client: str | None,
    user_defaults: bool,
    client_defaults: bool,
) -> QuotaEntity | None:
    """The quota entity the options name; None when they name a topic or a broker."""
    parts: dict[str, str | None] = {}
    if entity_type in _TYPES:
        if (entity_name is None) == (not entity_default):
            raise click.UsageError("give one of --entity-name and --entity-default")
        parts[_TYPES[entity_type]] = entity_name
    for kind, name, default in (
        ("user", user, user_defaults),
        ("client-id", client, client_defaults),
    ):
        if name is not None or default:
            if kind in parts or (name is not None and default):
                raise click.UsageError(f"the {kind} is named twice")
            parts[kind] = name
    if not parts:
        return None
    if entity_type is not None and entity_type not in _TYPES:
        raise click.UsageError(f"--user and --client do not go with --entity-type {entity_type}")
    return tuple(sorted(parts.items(), reverse=True))


def describe_label(entity: QuotaEntity) -> str:
    """``user-principal 'alice', client-id 'app'``; ``the default user-principal``."""
    return ", ".join(
        f"the default {_LABELS[kind]}" if name is None else f"{_LABELS[kind]} '{name}'"
        for kind, name in entity
    )


def alter_label(entity: QuotaEntity) -> str:
    """``user alice``, ``client app``, ``default user`` (kafka-configs.sh's words)."""
    words = {"user": "user", "client-id": "client"}
    return ", ".join(
        f"default {words[kind]}" if name is None else f"{words[kind]} {name}"
        for kind, name in entity
    )


def _check(code: int, message: str | None, action: str) -> None:
    from kio.schema.errors import ErrorCode  # noqa: PLC0415

    if code != 0:
        raise CliError(f"{action}: {ErrorCode(code).name.upper()}: {message or ''}".rstrip(": "))


def describe_quotas(
    entity: QuotaEntity, *, bootstrap_server: str | None, command_config: Path | None
) -> list[str]:
    """kafka-configs.sh's lines: ``Quota configs for user-principal 'alice' are k=v, ...``."""
    from kio.schema.describe_client_quotas.v1.request import (  # noqa: PLC0415
        ComponentData,
        DescribeClientQuotasRequest,
    )
    from kio.static.primitive import i8  # noqa: PLC0415

    components = tuple(
        ComponentData(
            entity_type=kind,
            match_type=i8(_MATCH_DEFAULT if name is None else _MATCH_EXACT),
            match=name,
        )
        for kind, name in entity
    )
    from strom.cli.quorum_client import command_config_connection  # noqa: PLC0415

    with command_config_connection(bootstrap_server, command_config) as connection:
        try:
            response: Any = connection.request(
                DescribeClientQuotasRequest(components=components, strict=True)
            )
        except OSError as error:
            raise CliError(f"DescribeClientQuotas failed: {error}") from None
    _check(response.error_code, response.error_message, "cannot describe the quotas")
    lines = []
    for entry in response.entries or ():
        found = tuple(sorted(((e.entity_type, e.entity_name) for e in entry.entity), reverse=True))
        values = ", ".join(f"{v.key}={float(v.value)}" for v in entry.values)
        lines.append(f"Quota configs for {describe_label(found)} are {values}")
    return lines


def alter_quotas(
    entity: QuotaEntity,
    *,
    set_quotas: Mapping[str, str],
    delete_quotas: Sequence[str],
    bootstrap_server: str | None,
    command_config: Path | None,
) -> None:
    """Set and remove quotas of one entity (``CliError`` with Kafka's message when refused)."""
    from kio.schema.alter_client_quotas.v1.request import (  # noqa: PLC0415
        AlterClientQuotasRequest,
        EntityData,
        EntryData,
        OpData,
    )
    from kio.static.primitive import f64  # noqa: PLC0415

    ops = []
    for key, text in set_quotas.items():
        try:
            value = float(text)
        except ValueError:
            raise click.BadParameter(
                f"{key}={text}: not a number", param_hint="'--add-config'"
            ) from None
        ops.append(OpData(key=key, value=f64(value), remove=False))
    ops += [OpData(key=key, value=f64(0.0), remove=True) for key in delete_quotas]
    request = AlterClientQuotasRequest(
        entries=(
            EntryData(
                entity=tuple(EntityData(entity_type=k, entity_name=n) for k, n in entity),
                ops=tuple(ops),
            ),
        ),
        validate_only=False,
    )
    from strom.cli.quorum_client import command_config_connection  # noqa: PLC0415

    with command_config_connection(bootstrap_server, command_config) as connection:
        try:
            response: Any = connection.request(request)
        except OSError as error:
            raise CliError(f"AlterClientQuotas failed: {error}") from None
    [entry] = response.entries
    _check(
        entry.error_code, entry.error_message, f"cannot alter the quotas of {alter_label(entity)}"
    )


def quota_options(func: Any) -> Any:
    """kafka-configs.sh's options that name quota entities."""
    for flag, help_text in (
        ("--client-defaults", "The default client id (with --user: the user's default)."),
        ("--user-defaults", "The default user."),
        ("--entity-default", "The default entity of --entity-type users or clients."),
    ):
        func = click.option(flag, is_flag=True, help=help_text)(func)
    func = click.option("--client", metavar="ID", help="A client id (may go with --user).")(func)
    return click.option("--user", metavar="NAME", help="A user (may go with --client).")(func)
