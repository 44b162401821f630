"""CreateAcls and DeleteAcls on the controller: validate, then write ACL records.

Kafka's ``AclControlManager``: each new ACL is checked (``AclBinding.invalid_reason``, answered
INVALID_REQUEST) and gets a fresh id unless the same ACL is already stored (then it succeeds
without a record); each deletion filter is checked and removes every stored ACL it matches,
answering them. All the records of one request go in one atomic batch.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from strom.common import ErrorCode
from strom.controller.results import NO_ERROR, ApiError, ControllerResult, RandomSource
from strom.metadata.acls import acl_record
from strom.metadata.image import MetadataImage
from strom.metadata.records import MetadataRecord, RemoveAccessControlEntryRecord
from strom.security.acls import AclBinding, AclBindingFilter

__all__ = ["AclDeleteResult", "create_acls", "delete_acls"]


@dataclass(frozen=True, slots=True)
class AclDeleteResult:
    """One filter's outcome: its error, or the ACLs it removed."""

    error: ApiError
    deleted: tuple[AclBinding, ...] = ()


def create_acls(
    image: MetadataImage, bindings: Sequence[AclBinding], random: RandomSource
) -> ControllerResult[list[ApiError]]:
    """One error (NO_ERROR when stored) per binding, in order."""
    stored = set(image.acls.acls.values())
    taken = set(image.acls.acls)
    records: list[MetadataRecord] = []
    results: list[ApiError] = []
    for binding in bindings:
        reason = binding.invalid_reason()
        if reason is not None:
            results.append(ApiError(ErrorCode.invalid_request, reason))
            continue
        if binding not in stored:
            stored.add(binding)
            acl_id = uuid.UUID(int=random.getrandbits(128), version=4)
            while acl_id in taken:
                acl_id = uuid.UUID(int=random.getrandbits(128), version=4)
            taken.add(acl_id)
            records.append(acl_record(acl_id, binding))
        results.append(NO_ERROR)
    return ControllerResult(records, results)


def delete_acls(
    image: MetadataImage, filters: Sequence[AclBindingFilter]
) -> ControllerResult[list[AclDeleteResult]]:
    """One result per filter, in order; an ACL two filters match is removed once."""
    removed: set[uuid.UUID] = set()
    results: list[AclDeleteResult] = []
    for acl_filter in filters:
        reason = acl_filter.invalid_reason()
        if reason is not None:
            results.append(AclDeleteResult(ApiError(ErrorCode.invalid_request, reason)))
            continue
        matched = [
            (acl_id, binding)
            for acl_id, binding in image.acls.acls.items()
            if acl_filter.matches(binding)
        ]
        removed.update(acl_id for acl_id, _ in matched)
        results.append(AclDeleteResult(NO_ERROR, tuple(binding for _, binding in matched)))
    records: list[MetadataRecord] = [RemoveAccessControlEntryRecord(id=i) for i in sorted(removed)]
    return ControllerResult(records, results)
