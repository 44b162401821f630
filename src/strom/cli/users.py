"""``strom users scram``: users' SCRAM credentials, as ``kafka-configs.sh --entity-type users``
sets, deletes and describes them (AlterUserScramCredentials, DescribeUserScramCredentials).

The password is salted and hashed on this side (librdkafka sends only the salted password);
``set`` asks for it when ``--password`` is not given.
"""

from __future__ import annotations

from pathlib import Path

import click
from confluent_kafka import KafkaException
from confluent_kafka.admin._scram import (
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialAlteration,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from strom.cli.client_common import (
    REQUEST_TIMEOUT_S,
    ClientGroup,
    CliError,
    ToolGroup,
    client_options,
    connect_admin,
    failure,
    handle_errors,
)

__all__ = ["users"]

_MECHANISMS = {
    "SCRAM-SHA-256": ScramMechanism.SCRAM_SHA_256,
    "SCRAM-SHA-512": ScramMechanism.SCRAM_SHA_512,
}
_mechanism_option = click.option(
    "--mechanism",
    type=click.Choice(sorted(_MECHANISMS), case_sensitive=False),
    required=True,
    help="SCRAM-SHA-256 or SCRAM-SHA-512.",
)


@click.group("users", cls=ToolGroup)
def users() -> None:
    """Users' SCRAM credentials, as kafka-configs.sh --entity-type users manages them."""


@users.group("scram", cls=ClientGroup)
def scram() -> None:
    """Set, delete or describe SCRAM credentials."""


def _alter(
    alterations: list[UserScramCredentialAlteration],
    *,
    bootstrap_server: str | None,
    command_config: Path | None,
) -> None:
    admin, _ = connect_admin(bootstrap_server=bootstrap_server, command_config=command_config)
    futures = admin.alter_user_scram_credentials(alterations, request_timeout=REQUEST_TIMEOUT_S)
    for user, future in futures.items():
        try:
            future.result()
        except KafkaException as error:
            raise failure(f"altering the SCRAM credentials of user {user!r}", error) from None


@scram.command("set")
@click.option("--user", required=True, help="The user name.")
@_mechanism_option
@click.option(
    "--password", prompt=True, hide_input=True, confirmation_prompt=True, help="The password."
)
@click.option(
    "--iterations",
    type=click.IntRange(4096, 16384),
    default=4096,
    show_default=True,
    help="PBKDF2 iterations.",
)
@client_options
@handle_errors
def set_(
    *,
    user: str,
    mechanism: str,
    password: str,
    iterations: int,
    bootstrap_server: str | None,
    command_config: Path | None,
) -> None:
    """Create or replace a user's credential for one mechanism.

    \b
    Examples:
      strom users scram set --user alice --mechanism SCRAM-SHA-256 --password alice-secret
      strom users scram set --user bob --mechanism SCRAM-SHA-512 --iterations 8192
    """
    info = ScramCredentialInfo(_MECHANISMS[mechanism.upper()], iterations)
    upsertion = UserScramCredentialUpsertion(user, info, password.encode())
    _alter([upsertion], bootstrap_server=bootstrap_server, command_config=command_config)
    click.echo(f"Completed updating SCRAM credentials for user-principal '{user}'.")


set_.name = "set"


@scram.command("delete")
@click.option("--user", required=True, help="The user name.")
@_mechanism_option
@client_options
@handle_errors
def delete(
    *, user: str, mechanism: str, bootstrap_server: str | None, command_config: Path | None
) -> None:
    """Delete a user's credential for one mechanism.

    \b
    Examples:
      strom users scram delete --user alice --mechanism SCRAM-SHA-256
    """
    deletion = UserScramCredentialDeletion(user, _MECHANISMS[mechanism.upper()])
    _alter([deletion], bootstrap_server=bootstrap_server, command_config=command_config)
    click.echo(f"Completed deleting SCRAM credentials for user-principal '{user}'.")


@scram.command("describe")
@click.option(
    "--user", "names", multiple=True, help="A user to describe; repeatable (default: all)."
)
@client_options
@handle_errors
def describe(
    *, names: tuple[str, ...], bootstrap_server: str | None, command_config: Path | None
) -> None:
    """Each user's mechanisms and iterations (never salts or keys), as kafka-configs.sh prints.

    \b
    Examples:
      strom users scram describe
      strom users scram describe --user alice
    """
    admin, _ = connect_admin(bootstrap_server=bootstrap_server, command_config=command_config)
    result = admin.describe_user_scram_credentials(
        list(names) or None, request_timeout=REQUEST_TIMEOUT_S
    )
    try:
        described = (
            {user: future.result() for user, future in result.items()}
            if isinstance(result, dict)
            else result.result()
        )
    except KafkaException as error:
        raise failure("describing SCRAM credentials", error) from None
    if not described and names:
        raise CliError(f"no SCRAM credentials for {', '.join(names)}")
    for user, description in sorted(described.items()):
        credentials = ",".join(
            f"{info.mechanism.name.replace('_', '-')}=iterations={info.iterations}"
            for info in description.scram_credential_infos
        )
        click.echo(f"SCRAM credential configs for user-principal '{user}' are {credentials}")
