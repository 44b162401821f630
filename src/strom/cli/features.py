"""``strom features``: the cluster's feature flags (KIP-584), as ``kafka-features.sh``.

``describe`` prints per feature the range the broker supports, the finalized level and the
metadata offset it is as of (ApiVersions v3+); ``upgrade``, ``downgrade`` and ``disable`` send
UpdateFeatures (a broker forwards it to the controller; ``--dry-run``: validate only) and print
one line per feature. ``metadata.version`` levels print as Kafka's release names. Both over
strom's own blocking client, which no client library's admin API covers here.
"""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import click

from strom.cli.client_common import (
    DEFAULT_BOOTSTRAP_SERVER,
    ClientCommand,
    ClientConfig,
    CliError,
    ToolGroup,
    client_options,
    handle_errors,
)

__all__ = ["features"]

METADATA_VERSION = "metadata.version"
_UPGRADE, _SAFE_DOWNGRADE, _UNSAFE_DOWNGRADE = 1, 2, 3
"""UpdateFeatures' upgrade types."""


@click.group("features", cls=ToolGroup)
def features() -> None:
    """Describe the cluster's feature flags (as kafka-features.sh)."""


@features.command("describe", cls=ClientCommand)
@client_options
@handle_errors
def describe(bootstrap_server: str | None, command_config: Path | None) -> None:
    """Print each feature's supported range, finalized level and epoch.

    \b
    Example:
      strom features --bootstrap-server localhost:9092 describe
    """
    supported, finalized, epoch = _features(bootstrap_server, command_config)
    for name in sorted(supported):
        low, high = supported[name]
        click.echo(
            f"Feature: {name}\tSupportedMinVersion: {_level(name, low)}\t"
            f"SupportedMaxVersion: {_level(name, high)}\t"
            f"FinalizedVersionLevel: {_level(name, finalized.get(name, 0))}\t"
            f"Epoch: {epoch if epoch >= 0 else '-'}"
        )


def _change(verb: str) -> click.Command:
    """``upgrade``, ``downgrade`` or ``disable``, with Kafka's options and lines."""

    @features.command(verb, cls=ClientCommand)
    @click.option(
        "--feature",
        "changes",
        multiple=True,
        metavar="NAME=LEVEL",
        help="A feature and its new level"
        + (" (disable: a name)" if verb == "disable" else "")
        + "; repeatable.",
    )
    @click.option(
        "--metadata", default=None, metavar="RELEASE", help="The metadata.version, e.g. 3.6-IV2."
    )
    @click.option("--dry-run", is_flag=True, help="Only check the change.")
    @click.option(
        "--unsafe", is_flag=True, hidden=verb == "upgrade", help="Allow lossy downgrades."
    )
    @client_options
    @handle_errors
    def change(
        *,
        changes: tuple[str, ...],
        metadata: str | None,
        dry_run: bool,
        unsafe: bool,
        bootstrap_server: str | None,
        command_config: Path | None,
    ) -> None:
        wanted = _parse_changes(changes, metadata, disable=verb == "disable")
        if verb == "upgrade":
            upgrade_type = _UPGRADE
        else:
            upgrade_type = _UNSAFE_DOWNGRADE if unsafe else _SAFE_DOWNGRADE
        outcome = _update(
            bootstrap_server, command_config, wanted, upgrade_type, validate_only=dry_run
        )
        done = {"upgrade": "upgraded", "downgrade": "downgraded", "disable": "disabled"}[verb]
        failed = 0
        for name, level in wanted.items():
            target = "" if verb == "disable" else f" to {_level(name, level)}"
            error = outcome.get(name)
            if error is None:
                click.echo(f"{name} {'can be' if dry_run else 'was'} {done}{target}.")
            else:
                failed += 1
                click.echo(f"Could not {verb} {name}{target}. {error}")
        if failed:
            raise CliError(f"{failed} out of {len(wanted)} operation(s) failed.")

    change.help = (
        f"{verb.capitalize()} feature levels (UpdateFeatures), as kafka-features.sh {verb}."
        "\n\n\b\nExamples:\n  strom features --bootstrap-server localhost:9092 "
        + (
            "disable --feature eligible.leader.replicas.version"
            if verb == "disable"
            else f"{verb} --feature eligible.leader.replicas.version={int(verb == 'upgrade')}"
            " --dry-run"
        )
        + ("\n  strom features upgrade --metadata 3.6-IV2" if verb == "upgrade" else "")
    )
    return change


for _verb in ("upgrade", "downgrade", "disable"):
    _change(_verb)


def _parse_changes(
    changes: tuple[str, ...], metadata: str | None, *, disable: bool
) -> dict[str, int]:
    wanted: dict[str, int] = {}
    for change in changes:
        name, sep, level = change.partition("=")
        if disable:
            if sep:
                raise click.BadParameter(f"{change!r}: give only the name", param_hint="--feature")
            wanted[name] = 0
            continue
        if not sep or not name or not level.isdigit():
            raise click.BadParameter(f"{change!r}: expected NAME=LEVEL", param_hint="--feature")
        wanted[name] = int(level)
    if metadata is not None:
        from strom.server.bootstrap_metadata import (  # noqa: PLC0415
            BootstrapError,
            release_metadata_version,
        )

        try:
            wanted[METADATA_VERSION] = release_metadata_version(metadata)
        except BootstrapError as error:
            raise click.BadParameter(str(error), param_hint="--metadata") from None
    if not wanted:
        raise click.UsageError("give --feature" + ("" if disable else " or --metadata"))
    return wanted


def _features(
    bootstrap_server: str | None, command_config: Path | None
) -> tuple[dict[str, tuple[int, int]], dict[str, int], int]:
    """Supported ranges, finalized levels and their epoch, from a broker's ApiVersions."""
    from kio.schema.api_versions.v3.request import ApiVersionsRequest  # noqa: PLC0415

    request = ApiVersionsRequest(client_software_name="strom", client_software_version="1")
    response = _ask(bootstrap_server, command_config, request)
    return (
        {f.name: (int(f.min_version), int(f.max_version)) for f in response.supported_features},
        {f.name: int(f.max_version_level) for f in response.finalized_features},
        int(response.finalized_features_epoch),
    )


def _ask(bootstrap_server: str | None, command_config: Path | None, request: Any) -> Any:
    """``request``'s response from a bootstrap server."""
    from strom.cli.quorum_client import connect  # noqa: PLC0415
    from strom.client.security import librdkafka_security  # noqa: PLC0415

    config = ClientConfig.build(
        bootstrap_server=bootstrap_server or DEFAULT_BOOTSTRAP_SERVER,
        command_config=command_config,
    )
    with connect(
        config.bootstrap_servers,
        timeout=config.connect_timeout_s + 60,
        security=librdkafka_security(config.settings),
    ) as connection:
        try:
            return connection.request(request)
        except OSError as error:
            raise CliError(f"{type(request).__name__[:-7]} failed: {error}") from None


def _update(
    bootstrap_server: str | None,
    command_config: Path | None,
    wanted: dict[str, int],
    upgrade_type: int,
    *,
    validate_only: bool,
) -> dict[str, str]:
    """Send UpdateFeatures (a broker forwards it to the controller); each refused feature's
    error, ``NAME: message``."""
    from kio.schema.errors import ErrorCode  # noqa: PLC0415
    from kio.schema.update_features.v1.request import (  # noqa: PLC0415
        FeatureUpdateKey,
        UpdateFeaturesRequest,
    )
    from kio.static.primitive import i8, i16, i32Timedelta  # noqa: PLC0415

    request = UpdateFeaturesRequest(
        timeout=i32Timedelta.parse(datetime.timedelta(seconds=60)),
        feature_updates=tuple(
            FeatureUpdateKey(
                feature=name, max_version_level=i16(level), upgrade_type=i8(upgrade_type)
            )
            for name, level in wanted.items()
        ),
        validate_only=validate_only,
    )
    response = _ask(bootstrap_server, command_config, request)
    return {
        result.feature: f"{ErrorCode(result.error_code).name.upper()}: {result.error_message}"
        for result in response.results
        if result.error_code != ErrorCode.none
    }


def _level(name: str, level: int) -> str:
    """A ``metadata.version`` level as Kafka's release name (``3.6-IV2``); others as numbers."""
    if name != METADATA_VERSION:
        return str(level)
    from strom.server.bootstrap_metadata import RELEASE_VERSIONS  # noqa: PLC0415

    names = {value: release for release, value in RELEASE_VERSIONS.items()}
    return names.get(level, f"UNKNOWN {level}")
