"""AlterUserScramCredentials on the controller: validate, then write SCRAM credential records.

Kafka's ``ScramControlManager``: a user may appear once per request (else every entry of it is
DUPLICATE_RESOURCE); an empty name is UNACCEPTABLE_CREDENTIAL, an unknown mechanism
UNSUPPORTED_SASL_MECHANISM; iterations must lie in [4096, 16384]; deleting a credential that
does not exist is RESOURCE_NOT_FOUND. The salted password becomes StoredKey and ServerKey here,
so the password never reaches the log. Records of every valid entry go in one atomic batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from strom.common import ErrorCode
from strom.controller.results import NO_ERROR, ApiError, ControllerResult
from strom.metadata.image import MetadataImage
from strom.metadata.records import (
    MetadataRecord,
    RemoveUserScramCredentialRecord,
    UserScramCredentialRecord,
)
from strom.security.scram import MAX_ITERATIONS, ScramMechanism, credential_from_salted_password

__all__ = ["ScramAlterResult", "ScramDeletion", "ScramUpsertion", "alter_scram_credentials"]


@dataclass(frozen=True, slots=True)
class ScramDeletion:
    name: str
    mechanism: int


@dataclass(frozen=True, slots=True)
class ScramUpsertion:
    name: str
    mechanism: int
    iterations: int
    salt: bytes
    salted_password: bytes

    def __repr__(self) -> str:
        return f"ScramUpsertion(name={self.name!r}, mechanism={self.mechanism})"


@dataclass(frozen=True, slots=True)
class ScramAlterResult:
    user: str
    error: ApiError


_DUPLICATE = ApiError(
    ErrorCode.duplicate_resource, "A user credential cannot be altered twice in the same request"
)


def _check_name_and_mechanism(name: str, mechanism: int) -> ApiError | None:
    if not name:
        return ApiError(ErrorCode.unacceptable_credential, "Username must not be empty")
    if mechanism not in {m.value for m in ScramMechanism}:
        return ApiError(ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism")
    return None


def _check_deletion(image: MetadataImage, deletion: ScramDeletion) -> ApiError | None:
    error = _check_name_and_mechanism(deletion.name, deletion.mechanism)
    if (
        error is None
        and image.scram.credential(ScramMechanism(deletion.mechanism), deletion.name) is None
    ):
        return ApiError(
            ErrorCode.resource_not_found, "Attempt to delete a user credential that does not exist"
        )
    return error


def _check_upsertion(upsertion: ScramUpsertion) -> ApiError | None:
    error = _check_name_and_mechanism(upsertion.name, upsertion.mechanism)
    if error is not None:
        return error
    if upsertion.iterations < ScramMechanism(upsertion.mechanism).min_iterations:
        return ApiError(ErrorCode.unacceptable_credential, "Too few iterations")
    if upsertion.iterations > MAX_ITERATIONS:
        return ApiError(ErrorCode.unacceptable_credential, "Too many iterations")
    return None


def alter_scram_credentials(
    image: MetadataImage,
    deletions: Sequence[ScramDeletion],
    upsertions: Sequence[ScramUpsertion],
) -> ControllerResult[list[ScramAlterResult]]:
    """One result per user named in the request."""
    failed: dict[str, ApiError] = {}
    accepted: dict[str, ScramDeletion | ScramUpsertion] = {}
    changes: list[ScramDeletion | ScramUpsertion] = [*deletions, *upsertions]
    for change in changes:
        if change.name in failed:
            continue
        if accepted.pop(change.name, None) is not None:
            failed[change.name] = _DUPLICATE
            continue
        error = (
            _check_deletion(image, change)
            if isinstance(change, ScramDeletion)
            else _check_upsertion(change)
        )
        if error is None:
            accepted[change.name] = change
        else:
            failed[change.name] = error
    records: list[MetadataRecord] = [_record(change) for change in accepted.values()]
    results = [ScramAlterResult(name, NO_ERROR) for name in accepted]
    results += [ScramAlterResult(name, error) for name, error in failed.items()]
    return ControllerResult(records, results)


def _record(change: ScramDeletion | ScramUpsertion) -> MetadataRecord:
    if isinstance(change, ScramDeletion):
        return RemoveUserScramCredentialRecord(name=change.name, mechanism=change.mechanism)
    mechanism = ScramMechanism(change.mechanism)
    credential = credential_from_salted_password(
        mechanism, change.salted_password, change.salt, change.iterations
    )
    return UserScramCredentialRecord(
        name=change.name,
        mechanism=mechanism,
        salt=credential.salt,
        stored_key=credential.stored_key,
        server_key=credential.server_key,
        iterations=credential.iterations,
    )
