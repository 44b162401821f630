"""CreateAcls (30), DescribeAcls (29) and DeleteAcls (31), v1 to v3.

CreateAcls and DeleteAcls are the controller's (``strom.controller.acl_control`` validates and
writes the records); brokers forward them. Both need ALTER on the cluster (else every entry is
CLUSTER_AUTHORIZATION_FAILED), DescribeAcls DESCRIBE, as Kafka's; without an authorizer all three
answer SECURITY_DISABLED. DescribeAcls answers from the node's metadata image, grouping the
matching ACLs by resource pattern.
"""

from __future__ import annotations

import enum
import logging
from collections import defaultdict
from collections.abc import Callable
from typing import Final, Protocol, TypeVar

from kio.schema.create_acls.v3 import request as create_request
from kio.schema.create_acls.v3 import response as create_response
from kio.schema.delete_acls.v3 import request as delete_request
from kio.schema.delete_acls.v3 import response as delete_response
from kio.schema.describe_acls.v3 import request as describe_request
from kio.schema.describe_acls.v3 import response as describe_response
from kio.static.primitive import i8
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode
from strom.controller import QuorumController
from strom.controller.acl_control import AclDeleteResult
from strom.controller.results import ApiError
from strom.metadata.image import MetadataImage
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.security.acls import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import as_newest, for_version
from strom.server.api.throttle import NO_THROTTLE
from strom.server.controller.controller_server import OperationRunner

__all__ = [
    "CreateAclsHandler",
    "DeleteAclsHandler",
    "DescribeAclsHandler",
    "create_error_response",
    "delete_error_response",
]

log = logging.getLogger(__name__)

_UNAUTHORIZED: Final = ApiError(ErrorCode.cluster_authorization_failed, None)
_NO_AUTHORIZER: Final = ApiError(ErrorCode.security_disabled, "No Authorizer is configured.")


def _refusal(context: RequestContext, operation: AclOperation) -> ApiError | None:
    """SECURITY_DISABLED without an authorizer (as Kafka), CLUSTER_AUTHORIZATION_FAILED without
    ``operation`` on the cluster, else None."""
    if context.authorizer is None:
        return _NO_AUTHORIZER
    return None if context.authorize(operation) else _UNAUTHORIZED


E = TypeVar("E", bound=enum.IntEnum)


def _enum(kind: type[E], code: int) -> E:
    """The enum member of a wire code; UNKNOWN (0) for codes Kafka does not define."""
    try:
        return kind(code)
    except ValueError:
        return kind(0)  # UNKNOWN, refused by the validation


def _binding(creation: create_request.AclCreation) -> AclBinding:
    return AclBinding(
        resource_type=_enum(ResourceType, creation.resource_type),
        resource_name=creation.resource_name,
        pattern_type=_enum(PatternType, creation.resource_pattern_type),
        principal=creation.principal,
        host=creation.host,
        operation=_enum(AclOperation, creation.operation),
        permission_type=_enum(AclPermissionType, creation.permission_type),
    )


def _filter(
    wire: describe_request.DescribeAclsRequest | delete_request.DeleteAclsFilter,
) -> AclBindingFilter:
    return AclBindingFilter(
        resource_type=_enum(ResourceType, wire.resource_type_filter),
        resource_name=wire.resource_name_filter,
        pattern_type=_enum(PatternType, wire.pattern_type_filter),
        principal=wire.principal_filter,
        host=wire.host_filter,
        operation=_enum(AclOperation, wire.operation),
        permission_type=_enum(AclPermissionType, wire.permission_type),
    )


class AclController(OperationRunner, Protocol):
    """What CreateAcls and DeleteAcls need of the controller."""

    @property
    def controller(self) -> QuorumController:
        """The controller's state machine (its ACL operations)."""
        ...


class CreateAclsHandler:
    api_key: Final = ApiKey.CREATE_ACLS
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.CREATE_ACLS]

    def __init__(self, controller: AclController) -> None:
        self._controller = controller

    async def handle(self, context: RequestContext) -> ResponsePayload:
        request = as_newest(context.body, create_request.CreateAclsRequest)
        bindings = [_binding(creation) for creation in request.creations]
        refused = _refusal(context, AclOperation.ALTER)
        if refused is not None:
            return _create_response(context, [refused] * len(bindings))
        results = await self._controller.run(
            "create ACLs",
            lambda image: self._controller.controller.create_acls(image, bindings),
        )
        for binding, error in zip(bindings, results, strict=True):
            if error.is_success:
                log.info("ACL created by %s: %s", context.principal, binding)
        return _create_response(context, results)


def create_error_response(context: RequestContext, code: ErrorCode) -> ResponsePayload:
    request = as_newest(context.body, create_request.CreateAclsRequest)
    return _create_response(context, [ApiError(code, None)] * len(request.creations))


def _create_response(context: RequestContext, errors: list[ApiError]) -> ResponsePayload:
    response = create_response.CreateAclsResponse(
        throttle_time=NO_THROTTLE,
        results=tuple(
            create_response.AclCreationResult(error_code=error.code, error_message=error.message)
            for error in errors
        ),
    )
    return for_version(response, context.api_version)


class DeleteAclsHandler:
    api_key: Final = ApiKey.DELETE_ACLS
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.DELETE_ACLS]

    def __init__(self, controller: AclController) -> None:
        self._controller = controller

    async def handle(self, context: RequestContext) -> ResponsePayload:
        request = as_newest(context.body, delete_request.DeleteAclsRequest)
        filters = [_filter(wire) for wire in request.filters]
        refused = _refusal(context, AclOperation.ALTER)
        if refused is not None:
            return _delete_response(context, [AclDeleteResult(refused)] * len(filters))
        controller = self._controller.controller
        results = await self._controller.run(
            "delete ACLs", lambda image: controller.delete_acls(image, filters)
        )
        for result in results:
            for binding in result.deleted:
                log.info("ACL deleted by %s: %s", context.principal, binding)
        return _delete_response(context, results)


def delete_error_response(context: RequestContext, code: ErrorCode) -> ResponsePayload:
    request = as_newest(context.body, delete_request.DeleteAclsRequest)
    return _delete_response(context, [AclDeleteResult(ApiError(code, None))] * len(request.filters))


def _delete_response(context: RequestContext, results: list[AclDeleteResult]) -> ResponsePayload:
    response = delete_response.DeleteAclsResponse(
        throttle_time=NO_THROTTLE,
        filter_results=tuple(
            delete_response.DeleteAclsFilterResult(
                error_code=result.error.code,
                error_message=result.error.message,
                matching_acls=tuple(
                    delete_response.DeleteAclsMatchingAcl(
                        error_code=ErrorCode.none,
                        error_message=None,
                        resource_type=i8(binding.resource_type),
                        resource_name=binding.resource_name,
                        pattern_type=i8(binding.pattern_type),
                        principal=binding.principal,
                        host=binding.host,
                        operation=i8(binding.operation),
                        permission_type=i8(binding.permission_type),
                    )
                    for binding in result.deleted
                ),
            )
            for result in results
        ),
    )
    return for_version(response, context.api_version)


class DescribeAclsHandler:
    api_key: Final = ApiKey.DESCRIBE_ACLS
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.DESCRIBE_ACLS]

    def __init__(self, image: Callable[[], MetadataImage]) -> None:
        self._image = image

    async def handle(self, context: RequestContext) -> ResponsePayload:
        acl_filter = _filter(as_newest(context.body, describe_request.DescribeAclsRequest))
        refused = _refusal(context, AclOperation.DESCRIBE)
        if refused is not None:
            return _describe_response(context, refused)
        reason = acl_filter.invalid_reason()
        if reason is not None:
            return _describe_response(context, ApiError(ErrorCode.invalid_request, reason))
        found = [b for b in self._image().acls.acls.values() if acl_filter.matches(b)]
        return _describe_response(context, ApiError(), found)


def _describe_response(
    context: RequestContext, error: ApiError, found: list[AclBinding] | None = None
) -> ResponsePayload:
    by_pattern: defaultdict[tuple[ResourceType, str, PatternType], list[AclBinding]]
    by_pattern = defaultdict(list)
    for binding in found or ():
        key = (binding.resource_type, binding.resource_name, binding.pattern_type)
        by_pattern[key].append(binding)
    response = describe_response.DescribeAclsResponse(
        throttle_time=NO_THROTTLE,
        error_code=error.code,
        error_message=error.message,
        resources=tuple(
            describe_response.DescribeAclsResource(
                resource_type=i8(resource_type),
                resource_name=name,
                pattern_type=i8(pattern_type),
                acls=tuple(
                    describe_response.AclDescription(
                        principal=binding.principal,
                        host=binding.host,
                        operation=i8(binding.operation),
                        permission_type=i8(binding.permission_type),
                    )
                    for binding in bindings
                ),
            )
            for (resource_type, name, pattern_type), bindings in sorted(by_pattern.items())
        ),
    )
    return for_version(response, context.api_version)
