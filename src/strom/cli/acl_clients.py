"""How ``strom acls`` reaches the cluster: CreateAcls, DescribeAcls and DeleteAcls, with ACLs
as ``strom.security.acls`` has them (Kafka's codes).

Two ways, one interface (:class:`AclClient`): confluent-kafka's admin client (librdkafka, and
so every login it has) where its types can say what is asked, and strom's own blocking client
where they cannot: a delegation token or a user principal (resource types librdkafka does not
know), or every ACL of the cluster (librdkafka reads those two types as UNKNOWN). strom's
client takes TLS and PLAIN, SCRAM or unsecured OAUTHBEARER logins from ``--command-config``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final, Protocol

from confluent_kafka import KafkaException
from confluent_kafka.admin import (  # type: ignore[attr-defined]
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)
from kio.schema.create_acls.v3.request import AclCreation, CreateAclsRequest
from kio.schema.delete_acls.v3.request import DeleteAclsFilter, DeleteAclsRequest
from kio.schema.describe_acls.v3.request import DescribeAclsRequest
from kio.schema.errors import ErrorCode
from kio.static.primitive import i8

from strom.cli.client_common import REQUEST_TIMEOUT_S, CliError, connect_admin, failure
from strom.cli.quorum_client import command_config_connection
from strom.client.blocking import BrokerConnection
from strom.security import acls

__all__ = ["AclClient", "acl_client"]

_LIBRDKAFKA_TYPES: Final = frozenset(
    {
        acls.ResourceType.TOPIC,
        acls.ResourceType.GROUP,
        acls.ResourceType.CLUSTER,
        acls.ResourceType.TRANSACTIONAL_ID,
    }
)
"""The resource types librdkafka's admin client knows (its BROKER is Kafka's CLUSTER)."""


class AclClient(Protocol):
    """CreateAcls, DescribeAcls and DeleteAcls; a failure is a ``CliError`` naming ``action``."""

    def create(self, bindings: Sequence[acls.AclBinding], action: str) -> None: ...

    def describe(self, acl_filter: acls.AclBindingFilter, action: str) -> list[acls.AclBinding]: ...

    def delete(self, filters: Sequence[acls.AclBindingFilter], action: str) -> None: ...


@contextmanager
def acl_client(
    resource_types: set[acls.ResourceType],
    *,
    bootstrap_server: str | None,
    command_config: Path | None,
) -> Iterator[AclClient]:
    """The client for ACLs of ``resource_types`` (ANY: every ACL of the cluster)."""
    if resource_types <= _LIBRDKAFKA_TYPES:
        admin, _ = connect_admin(bootstrap_server=bootstrap_server, command_config=command_config)
        yield _Librdkafka(admin)
        return
    with command_config_connection(bootstrap_server, command_config) as connection:
        yield _Wire(connection)


class _Librdkafka:
    """confluent-kafka's AdminClient; its enums have Kafka's codes."""

    def __init__(self, admin: AdminClient) -> None:
        self._admin = admin

    def create(self, bindings: Sequence[acls.AclBinding], action: str) -> None:
        theirs = [
            AclBinding(
                ResourceType(binding.resource_type),
                binding.resource_name,
                ResourcePatternType(binding.pattern_type),
                binding.principal,
                binding.host,
                AclOperation(binding.operation),
                AclPermissionType(binding.permission_type),
            )
            for binding in bindings
        ]
        self._wait(self._admin.create_acls(theirs, request_timeout=REQUEST_TIMEOUT_S), action)

    def describe(self, acl_filter: acls.AclBindingFilter, action: str) -> list[acls.AclBinding]:
        future = self._admin.describe_acls(_theirs(acl_filter), request_timeout=REQUEST_TIMEOUT_S)
        try:
            found = future.result()
        except KafkaException as error:
            raise failure(action, error) from None
        return [
            acls.AclBinding(
                acls.ResourceType(binding.restype.value),
                binding.name,
                acls.PatternType(binding.resource_pattern_type.value),
                binding.principal,
                binding.host,
                acls.AclOperation(binding.operation.value),
                acls.AclPermissionType(binding.permission_type.value),
            )
            for binding in found
        ]

    def delete(self, filters: Sequence[acls.AclBindingFilter], action: str) -> None:
        theirs = [_theirs(acl_filter) for acl_filter in filters]
        self._wait(self._admin.delete_acls(theirs, request_timeout=REQUEST_TIMEOUT_S), action)

    @staticmethod
    def _wait(futures: dict[Any, Any], action: str) -> None:
        for future in futures.values():
            try:
                future.result()
            except KafkaException as error:
                raise failure(action, error) from None


def _theirs(acl_filter: acls.AclBindingFilter) -> AclBindingFilter:
    return AclBindingFilter(
        ResourceType(acl_filter.resource_type),
        acl_filter.resource_name,  # type: ignore[arg-type]  # None: any
        ResourcePatternType(acl_filter.pattern_type),
        acl_filter.principal,  # type: ignore[arg-type]
        acl_filter.host,  # type: ignore[arg-type]
        AclOperation(acl_filter.operation),
        AclPermissionType(acl_filter.permission_type),
    )


class _Wire:
    """strom's own blocking client, speaking CreateAcls, DescribeAcls and DeleteAcls v3."""

    def __init__(self, connection: BrokerConnection) -> None:
        self._connection = connection

    def _request(self, body: Any, action: str) -> Any:
        try:
            return self._connection.request(body)
        except OSError as error:
            raise CliError(f"{action}: {error}") from None

    def create(self, bindings: Sequence[acls.AclBinding], action: str) -> None:
        creations = tuple(
            AclCreation(
                resource_type=i8(binding.resource_type),
                resource_name=binding.resource_name,
                resource_pattern_type=i8(binding.pattern_type),
                principal=binding.principal,
                host=binding.host,
                operation=i8(binding.operation),
                permission_type=i8(binding.permission_type),
            )
            for binding in bindings
        )
        response = self._request(CreateAclsRequest(creations=creations), action)
        for result in response.results:
            _check(result.error_code, result.error_message, action)

    def describe(self, acl_filter: acls.AclBindingFilter, action: str) -> list[acls.AclBinding]:
        response = self._request(DescribeAclsRequest(**_fields(acl_filter)), action)
        _check(response.error_code, response.error_message, action)
        return [
            acls.AclBinding(
                acls.ResourceType(resource.resource_type),
                resource.resource_name,
                acls.PatternType(resource.pattern_type),
                acl.principal,
                acl.host,
                acls.AclOperation(acl.operation),
                acls.AclPermissionType(acl.permission_type),
            )
            for resource in response.resources
            for acl in resource.acls
        ]

    def delete(self, filters: Sequence[acls.AclBindingFilter], action: str) -> None:
        request = DeleteAclsRequest(filters=tuple(DeleteAclsFilter(**_fields(f)) for f in filters))
        for result in self._request(request, action).filter_results:
            _check(result.error_code, result.error_message, action)


def _fields(acl_filter: acls.AclBindingFilter) -> dict[str, Any]:
    """DescribeAcls' filter fields, which DeleteAcls' filters share."""
    return {
        "resource_type_filter": i8(acl_filter.resource_type),
        "resource_name_filter": acl_filter.resource_name,
        "pattern_type_filter": i8(acl_filter.pattern_type),
        "principal_filter": acl_filter.principal,
        "host_filter": acl_filter.host,
        "operation": i8(acl_filter.operation),
        "permission_type": i8(acl_filter.permission_type),
    }


def _check(code: int, message: str | None, action: str) -> None:
    if code != 0:
        name = ErrorCode(code).name.upper()
        raise CliError(f"{action}: {name}: {message}" if message else f"{action}: {name}")
