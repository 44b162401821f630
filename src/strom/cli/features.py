"""``strom features describe``: the cluster's feature flags (KIP-584), as ``kafka-features.sh
describe`` prints them: per feature, the range the broker supports, the finalized level and the
metadata offset it is as of. ``metadata.version`` levels print as Kafka's release names.

They come from ApiVersions (v3 on), over strom's own blocking client. ``upgrade``, ``downgrade``
and ``disable`` take Kafka's options, but strom's controller does not serve UpdateFeatures: a
cluster's levels are set when it is formatted (``strom storage format --release-version``).
They check the change against what the cluster supports and then say so in one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from strom.cli.client_common import (
    DEFAULT_BOOTSTRAP_SERVER,
    ClientCommand,
    ClientConfig,
    ClientGroup,
    CliError,
    client_options,
    handle_errors,
)

__all__ = ["features"]

METADATA_VERSION = "metadata.version"
_NOT_SERVED = (
    "strom's controller does not serve UpdateFeatures: feature levels are set when the "
    "cluster is formatted (strom storage format --release-version)"
)


@click.group("features", cls=ClientGroup)
@client_options
def features(bootstrap_server: str | None, command_config: Path | None) -> None:
    """Describe the cluster's feature flags (as kafka-features.sh)."""
    # The subcommands read these (ctx.parent.params) unless given after the verb.


@features.command("describe", cls=ClientCommand)
@client_options
@click.pass_context
@handle_errors
def describe(ctx: click.Context, bootstrap_server: str | None, command_config: Path | None) -> None:
    """Print each feature's supported range, finalized level and epoch.

    \b
    Example:
      strom features --bootstrap-server localhost:9092 describe
    """
    supported, finalized, epoch = _features(ctx, bootstrap_server, command_config)
    for name in sorted(supported):
        low, high = supported[name]
        click.echo(
            f"Feature: {name}\tSupportedMinVersion: {_level(name, low)}\t"
            f"SupportedMaxVersion: {_level(name, high)}\t"
            f"FinalizedVersionLevel: {_level(name, finalized.get(name, 0))}\t"
            f"Epoch: {epoch if epoch >= 0 else '-'}"
        )


def _change(verb: str) -> click.Command:
    """``upgrade``, ``downgrade`` or ``disable``: Kafka's options, checked, then refused."""

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
    @click.pass_context
    @handle_errors
    def change(
        ctx: click.Context,
        *,
        changes: tuple[str, ...],
        metadata: str | None,
        dry_run: bool,
        unsafe: bool,
        bootstrap_server: str | None,
        command_config: Path | None,
    ) -> None:
        wanted = _parse_changes(changes, metadata, disable=verb == "disable")
        supported, finalized, _ = _features(ctx, bootstrap_server, command_config)
        for name, level in wanted.items():
            if name not in supported:
                raise CliError(f"the cluster does not know the feature {name!r}")
            low, high = supported[name]
            if level != 0 and not low <= level <= high:
                raise CliError(
                    f"{name} level {_level(name, level)} is outside the supported range "
                    f"{_level(name, low)}-{_level(name, high)}"
                )
            current = finalized.get(name, 0)
            if (verb == "upgrade" and level < current) or (verb != "upgrade" and level > current):
                raise CliError(
                    f"cannot {verb} {name} from {_level(name, current)} to {_level(name, level)}"
                )
        # --dry-run and --unsafe change nothing here: no change can be applied.
        raise CliError(f"the change is valid, but {_NOT_SERVED}")

    change.help = (
        f"{verb.capitalize()} feature levels (UpdateFeatures): not served by strom, see "
        "docs/cli.md.\n\n\b\nExample:\n  strom features --bootstrap-server localhost:9092 "
        + (
            "disable --feature eligible.leader.replicas.version"
            if verb == "disable"
            else f"{verb} --feature eligible.leader.replicas.version=1 --dry-run"
        )
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
    ctx: click.Context, bootstrap_server: str | None, command_config: Path | None
) -> tuple[dict[str, tuple[int, int]], dict[str, int], int]:
    """Supported ranges, finalized levels and their epoch, from a broker's ApiVersions."""
    from kio.schema.api_versions.v3.request import ApiVersionsRequest  # noqa: PLC0415

    from strom.cli.quorum_client import connect  # noqa: PLC0415
    from strom.client.security import librdkafka_security  # noqa: PLC0415

    before = ctx.parent.params if ctx.parent is not None else {}
    before_server, before_config = before.get("bootstrap_server"), before.get("command_config")
    config = ClientConfig.build(
        bootstrap_server=bootstrap_server or before_server or DEFAULT_BOOTSTRAP_SERVER,
        command_config=command_config or before_config,
    )
    with connect(
        config.bootstrap_servers,
        timeout=config.connect_timeout_s + 30,
        security=librdkafka_security(config.settings),
    ) as connection:
        try:
            response: Any = connection.request(
                ApiVersionsRequest(client_software_name="strom", client_software_version="1")
            )
        except OSError as error:
            raise CliError(f"ApiVersions failed: {error}") from None
    return (
        {f.name: (int(f.min_version), int(f.max_version)) for f in response.supported_features},
        {f.name: int(f.max_version_level) for f in response.finalized_features},
        int(response.finalized_features_epoch),
    )


def _level(name: str, level: int) -> str:
    """A ``metadata.version`` level as Kafka's release name (``3.6-IV2``); others as numbers."""
    if name != METADATA_VERSION:
        return str(level)
    from strom.server.bootstrap_metadata import RELEASE_VERSIONS  # noqa: PLC0415

    names = {value: release for release, value in RELEASE_VERSIONS.items()}
    return names.get(level, f"UNKNOWN {level}")
