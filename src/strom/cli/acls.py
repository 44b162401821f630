"""``strom acls add|remove|list``: ACLs, as ``kafka-acls.sh --add|--remove|--list`` manages them
(CreateAcls, DeleteAcls, DescribeAcls).

Resources: ``--topic``, ``--group``, ``--transactional-id``, ``--delegation-token``,
``--user-principal`` (each repeatable) and ``--cluster``, with ``--resource-pattern-type``
(literal by default; prefixed; any and match select ACLs to list or remove). Entries:
``--allow-principal`` and ``--deny-principal`` with ``--allow-host`` / ``--deny-host`` (``*``
by default) and ``--operation`` (All by default). ``--producer`` grants
WRITE, DESCRIBE and CREATE on the topics (WRITE and DESCRIBE on the transactional ids,
IDEMPOTENT_WRITE on the cluster with ``--idempotent``); ``--consumer`` READ and DESCRIBE on the
topics and READ on the groups. The output is kafka-acls.sh's. ``strom.cli.acl_clients`` says
which client carries the requests.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import click

from strom.cli.acl_clients import acl_client
from strom.cli.client_common import CliError, ToolGroup, client_options, handle_errors
from strom.security.acls import (
    CLUSTER_NAME,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

__all__ = ["acls"]

_OPERATIONS: Final = {
    "All": AclOperation.ALL,
    "Read": AclOperation.READ,
    "Write": AclOperation.WRITE,
    "Create": AclOperation.CREATE,
    "Delete": AclOperation.DELETE,
    "Alter": AclOperation.ALTER,
    "Describe": AclOperation.DESCRIBE,
    "ClusterAction": AclOperation.CLUSTER_ACTION,
    "DescribeConfigs": AclOperation.DESCRIBE_CONFIGS,
    "AlterConfigs": AclOperation.ALTER_CONFIGS,
    "IdempotentWrite": AclOperation.IDEMPOTENT_WRITE,
    "CreateTokens": AclOperation.CREATE_TOKENS,
    "DescribeTokens": AclOperation.DESCRIBE_TOKENS,
}
_BY_LOWER_NAME: Final = {name.lower(): operation for name, operation in _OPERATIONS.items()}
_PATTERNS: Final = {
    "literal": PatternType.LITERAL,
    "prefixed": PatternType.PREFIXED,
    "any": PatternType.ANY,
    "match": PatternType.MATCH,
}


@dataclass(frozen=True, slots=True)
class _Resource:
    type: ResourceType
    name: str
    pattern: PatternType

    def __str__(self) -> str:
        return (
            f"ResourcePattern(resourceType={self.type.name}, name={self.name}, "
            f"patternType={self.pattern.name})"
        )


@dataclass(frozen=True, slots=True)
class _Entry:
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermissionType

    def __str__(self) -> str:
        return (
            f"(principal={self.principal}, host={self.host}, operation={self.operation.name}, "
            f"permissionType={self.permission.name})"
        )


@dataclass(frozen=True, slots=True)
class _Selection:
    """What the command line names: resources and the entries wanted on each."""

    resources: list[_Resource]
    entries: dict[_Resource, set[_Entry]]


def _resource_options(func: click.decorators.FC) -> click.decorators.FC:
    options = [
        click.option("--topic", "topics", multiple=True, help="A topic (repeatable; * for all)."),
        click.option("--group", "groups", multiple=True, help="A consumer group (repeatable)."),
        click.option("--cluster", is_flag=True, help="The cluster."),
        click.option(
            "--transactional-id", "transactional_ids", multiple=True, help="A transactional id."
        ),
        click.option(
            "--delegation-token",
            "delegation_tokens",
            multiple=True,
            metavar="TOKEN",
            help="A delegation token (repeatable; its token id).",
        ),
        click.option(
            "--user-principal",
            "user_principals",
            multiple=True,
            metavar="TYPE:NAME",
            help="A user principal, for CreateTokens and DescribeTokens (repeatable).",
        ),
        click.option(
            "--resource-pattern-type",
            "pattern",
            type=click.Choice(sorted(_PATTERNS), case_sensitive=False),
            default="literal",
            show_default=True,
            help="How resource names match: literal, prefixed (any and match: to list or remove).",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _entry_options(func: click.decorators.FC) -> click.decorators.FC:
    options = [
        click.option(
            "--allow-principal",
            "allow_principals",
            multiple=True,
            metavar="TYPE:NAME",
            help="A principal to allow (repeatable), User:alice.",
        ),
        click.option(
            "--deny-principal",
            "deny_principals",
            multiple=True,
            metavar="TYPE:NAME",
            help="A principal to deny (repeatable).",
        ),
        click.option(
            "--allow-host", "allow_hosts", multiple=True, help="Allowed from.  [default: *]"
        ),
        click.option("--deny-host", "deny_hosts", multiple=True, help="Denied from.  [default: *]"),
        click.option(
            "--operation",
            "operations",
            multiple=True,
            type=click.Choice(list(_OPERATIONS), case_sensitive=False),
            help="An operation (repeatable).  [default: All]",
        ),
        click.option("--producer", is_flag=True, help="What a producer needs."),
        click.option("--consumer", is_flag=True, help="What a consumer needs (needs --group)."),
        click.option("--idempotent", is_flag=True, help="With --producer: IdempotentWrite too."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _resources(
    *,
    topics: Iterable[str],
    groups: Iterable[str],
    cluster: bool,
    transactional_ids: Iterable[str],
    delegation_tokens: Iterable[str],
    user_principals: Iterable[str],
    pattern: str,
) -> list[_Resource]:
    kind = _PATTERNS[pattern.lower()]
    named = [
        *((ResourceType.TOPIC, name) for name in topics),
        *((ResourceType.GROUP, name) for name in groups),
        *((ResourceType.TRANSACTIONAL_ID, name) for name in transactional_ids),
        *((ResourceType.DELEGATION_TOKEN, name) for name in delegation_tokens),
        *((ResourceType.USER, name) for name in user_principals),
    ]
    if cluster:
        named.append((ResourceType.CLUSTER, CLUSTER_NAME))
    return [_Resource(resource_type, name, kind) for resource_type, name in named]


def _entries(
    principals: Iterable[tuple[str, AclPermissionType]],
    hosts: dict[AclPermissionType, tuple[str, ...]],
    operations: Iterable[AclOperation],
) -> set[_Entry]:
    return {
        _Entry(principal, host, operation, permission)
        for principal, permission in principals
        for host in hosts[permission] or ("*",)
        for operation in operations
    }


def _selection(
    resources: list[_Resource],
    *,
    allow_principals: tuple[str, ...],
    deny_principals: tuple[str, ...],
    allow_hosts: tuple[str, ...],
    deny_hosts: tuple[str, ...],
    operations: tuple[str, ...],
    producer: bool,
    consumer: bool,
    idempotent: bool,
) -> _Selection:
    """kafka-acls.sh's ``getResourceToAcls``: explicit operations, or the producer and consumer
    shortcuts' operations on each resource kind."""
    for principal in (*allow_principals, *deny_principals):
        if ":" not in principal:
            raise CliError(f"principal {principal!r} must be TYPE:NAME (User:alice)")
    if idempotent and not producer:
        raise CliError("--idempotent is only available with --producer")
    principals = [
        *((p, AclPermissionType.ALLOW) for p in allow_principals),
        *((p, AclPermissionType.DENY) for p in deny_principals),
    ]
    hosts = {AclPermissionType.ALLOW: allow_hosts, AclPermissionType.DENY: deny_hosts}
    entries: dict[_Resource, set[_Entry]] = defaultdict(set)
    if not (producer or consumer):
        chosen = [_BY_LOWER_NAME[name.lower()] for name in operations] or [AclOperation.ALL]
        for resource in resources:
            entries[resource] |= _entries(principals, hosts, chosen)
        return _Selection(resources, dict(entries))
    wanted = _shortcut_operations(resources, producer=producer, consumer=consumer)
    if idempotent:
        cluster = _Resource(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL)
        resources = [*resources, cluster]
        wanted[cluster] = [AclOperation.IDEMPOTENT_WRITE]
    for resource, chosen in wanted.items():
        entries[resource] |= _entries(principals, hosts, chosen)
    return _Selection([r for r in resources if r in entries], dict(entries))


def _shortcut_operations(
    resources: list[_Resource], *, producer: bool, consumer: bool
) -> dict[_Resource, list[AclOperation]]:
    kinds = {resource.type for resource in resources}
    if ResourceType.TOPIC not in kinds:
        raise CliError("--producer and --consumer need --topic")
    if consumer and ResourceType.GROUP not in kinds:
        raise CliError("--consumer needs --group")
    wanted: dict[_Resource, list[AclOperation]] = defaultdict(list)
    for resource in resources:
        if resource.type == ResourceType.TOPIC:
            if producer:
                wanted[resource] += [AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE]
            if consumer:
                wanted[resource] += [AclOperation.READ, AclOperation.DESCRIBE]
        elif resource.type == ResourceType.TRANSACTIONAL_ID and producer:
            wanted[resource] += [AclOperation.WRITE, AclOperation.DESCRIBE]
        elif resource.type == ResourceType.GROUP and consumer:
            wanted[resource] += [AclOperation.READ]
    return wanted


def _binding(resource: _Resource, entry: _Entry) -> AclBinding:
    return AclBinding(
        resource.type,
        resource.name,
        resource.pattern,
        entry.principal,
        entry.host,
        entry.operation,
        entry.permission,
    )


def _filter(resource: _Resource | None, entry: _Entry | None = None) -> AclBindingFilter:
    """ACLs of ``resource`` (any without one) with ``entry``'s values (any without one)."""
    if resource is None:
        return AclBindingFilter()
    if entry is None:
        return AclBindingFilter(resource.type, resource.name, resource.pattern)
    return AclBindingFilter(
        resource.type,
        resource.name,
        resource.pattern,
        entry.principal,
        entry.host,
        entry.operation,
        entry.permission,
    )


def _print_acls(resource: _Resource | str, entries: Iterable[_Entry], heading: str) -> None:
    lines = "\n".join(f"\t{entry}" for entry in sorted(entries, key=str))
    click.echo(f"{heading} for resource `{resource}`: \n {lines} \n")


@click.group("acls", cls=ToolGroup)
def acls() -> None:
    """ACLs (with authorizer.class.name set), as kafka-acls.sh manages them."""


@acls.command("add")
@_resource_options
@_entry_options
@client_options
@handle_errors
def add(
    *,
    bootstrap_server: str | None,
    command_config: Path | None,
    **options: object,
) -> None:
    """Add ACLs: principals allowed (or denied) operations on resources.

    \b
    Examples:
      strom acls add --allow-principal User:alice --operation Read --topic orders
      strom acls add --allow-principal User:alice --operation Write --topic orders- \\
        --resource-pattern-type prefixed
      strom acls add --allow-principal User:alice --producer --topic orders
      strom acls add --allow-principal User:bob --consumer --topic orders --group billing
    """
    selection = _select(options)
    if not all(selection.entries.get(resource) for resource in selection.resources):
        raise CliError("give --allow-principal or --deny-principal")
    types = {resource.type for resource in selection.resources}
    with acl_client(
        types, bootstrap_server=bootstrap_server, command_config=command_config
    ) as client:
        for resource in selection.resources:
            entries = selection.entries[resource]
            _print_acls(resource, entries, "Adding ACLs")
            bindings = [_binding(resource, entry) for entry in entries]
            client.create(bindings, f"adding ACLs for {resource}")


@acls.command("remove")
@_resource_options
@_entry_options
@click.option("--force", is_flag=True, help="Do not ask for confirmation.")
@client_options
@handle_errors
def remove(
    *,
    force: bool,
    bootstrap_server: str | None,
    command_config: Path | None,
    **options: object,
) -> None:
    """Remove ACLs: the ones named, or every ACL of the resources without principals.

    \b
    Examples:
      strom acls remove --allow-principal User:alice --operation Read --topic orders --force
      strom acls remove --topic orders --force
    """
    selection = _select(options)
    types = {resource.type for resource in selection.resources}
    with acl_client(
        types, bootstrap_server=bootstrap_server, command_config=command_config
    ) as client:
        for resource in selection.resources:
            entries = selection.entries.get(resource, set())
            question = (
                f"Are you sure you want to delete all ACLs for resource filter `{resource}`?"
                if not entries
                else f"Are you sure you want to remove ACLs from resource filter `{resource}`?"
            )
            if not force and not click.confirm(question):
                continue
            filters = [_filter(resource, entry) for entry in entries] or [_filter(resource)]
            client.delete(filters, f"removing ACLs of {resource}")


@acls.command("list")
@_resource_options
@click.option("--principal", "principals", multiple=True, help="Only this principal's ACLs.")
@client_options
@handle_errors
def list_(
    *,
    principals: tuple[str, ...],
    bootstrap_server: str | None,
    command_config: Path | None,
    **options: object,
) -> None:
    """List ACLs: of the resources named (with their pattern type), or all of them.

    \b
    Examples:
      strom acls list
      strom acls list --topic orders
      strom acls list --topic orders --resource-pattern-type match
      strom acls list --principal User:alice
    """
    resources = _resources(**options)  # type: ignore[arg-type]  # click's values
    found: dict[_Resource, set[_Entry]] = defaultdict(set)
    types = {resource.type for resource in resources} or {ResourceType.ANY}
    with acl_client(
        types, bootstrap_server=bootstrap_server, command_config=command_config
    ) as client:
        for acl_filter in [_filter(resource) for resource in resources] or [_filter(None)]:
            for binding in client.describe(acl_filter, "listing ACLs"):
                resource = _Resource(
                    binding.resource_type, binding.resource_name, binding.pattern_type
                )
                found[resource].add(
                    _Entry(
                        binding.principal,
                        binding.host,
                        binding.operation,
                        binding.permission_type,
                    )
                )
    for principal in principals or (None,):
        if principal is not None:
            click.echo(f"ACLs for principal `{principal}`")
        for resource, entries in sorted(found.items(), key=lambda item: str(item[0])):
            shown = [e for e in entries if principal is None or e.principal == principal]
            if shown:
                _print_acls(resource, shown, "Current ACLs")


list_.name = "list"


def _select(options: dict[str, object]) -> _Selection:
    """The resources and entries of ``add`` or ``remove``'s options."""
    resource_names = (
        "topics",
        "groups",
        "cluster",
        "transactional_ids",
        "delegation_tokens",
        "user_principals",
        "pattern",
    )
    resources = _resources(**{name: options[name] for name in resource_names})  # type: ignore[arg-type]
    if not resources:
        raise CliError(
            "name a resource: --topic, --group, --cluster, --transactional-id, "
            "--delegation-token, --user-principal"
        )
    entry_options = {name: value for name, value in options.items() if name not in resource_names}
    return _selection(resources, **entry_options)  # type: ignore[arg-type]
