"""AlterClientQuotas on the controller: validate, then write ``ClientQuotaRecord``s.

Kafka's ``ClientQuotaControlManager``: an entity is ``user``, ``client-id`` or both (a name of
None is the default entity); a key appears once per entity and an entity once per request
(else INVALID_REQUEST); values must be above 0, and whole numbers for the byte rates.
Removing a quota that is not set writes nothing, nor does setting the value already set.
The records of every valid entity go in one atomic batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from strom.common import ErrorCode
from strom.controller.results import NO_ERROR, ApiError, ControllerResult
from strom.metadata.client_quotas import (
    CLIENT_ID,
    INTEGRAL_QUOTA_KEYS,
    QUOTA_KEYS,
    USER,
    ClientQuotaEntity,
    quota_entity,
)
from strom.metadata.image import MetadataImage
from strom.metadata.records import ClientQuotaRecord, EntityData, MetadataRecord

__all__ = ["QuotaAlterResult", "QuotaAlteration", "alter_client_quotas"]

_LONG_MAX = float(2**63 - 1)


@dataclass(frozen=True, slots=True)
class QuotaAlteration:
    """One entity's changes: key -> new value, or None to remove it."""

    entity: tuple[tuple[str, str | None], ...]
    """The (type, name) parts as the request lists them."""
    ops: tuple[tuple[str, float | None], ...]


@dataclass(frozen=True, slots=True)
class QuotaAlterResult:
    entity: tuple[tuple[str, str | None], ...]
    error: ApiError


def _invalid(message: str) -> ApiError:
    return ApiError(ErrorCode.invalid_request, message)


def _check_entity(parts: Sequence[tuple[str, str | None]]) -> ApiError | None:
    if not parts:
        return _invalid("Invalid empty client quota entity")
    kinds = [kind for kind, _ in parts]
    for kind in kinds:
        if kinds.count(kind) > 1:
            return _invalid(f"Invalid client quota entity, duplicate entity entry {kind}")
        if kind not in (USER, CLIENT_ID):
            return _invalid(f"Unhandled client quota entity type: {kind}")
    return None


def _check_value(key: str, value: float) -> ApiError | None:
    if key not in QUOTA_KEYS:
        return _invalid(f"Invalid configuration key {key}")
    if value <= 0.0:
        return _invalid(f"Quota {key} must be greater than 0")
    if key in INTEGRAL_QUOTA_KEYS:
        if value > _LONG_MAX:
            return _invalid(f"Proposed value for {key} is too large for a LONG.")
        if abs(value % 1.0) > 1e-6:
            return _invalid(f"{key} cannot be a fractional value.")
    return None


def _entity_records(
    image: MetadataImage, alteration: QuotaAlteration
) -> tuple[list[MetadataRecord], ApiError]:
    error = _check_entity(alteration.entity)
    if error is not None:
        return [], error
    keys = [key for key, _ in alteration.ops]
    if len(set(keys)) != len(keys):
        duplicate = next(key for key in keys if keys.count(key) > 1)
        return [], _invalid(f"Duplicate quota key {duplicate} not updating quota for this entity")
    entity: ClientQuotaEntity = quota_entity(dict(alteration.entity))
    parts = tuple(EntityData(kind, name) for kind, name in entity)
    current = image.client_quotas.quotas(entity)
    records: list[MetadataRecord] = []
    for key, value in alteration.ops:
        if value is None:
            if key in current:
                records.append(ClientQuotaRecord(entity=parts, key=key, value=0.0, remove=True))
            continue
        error = _check_value(key, value)
        if error is not None:
            return [], error
        if current.get(key) != value:
            records.append(ClientQuotaRecord(entity=parts, key=key, value=float(value)))
    return records, NO_ERROR


def alter_client_quotas(
    image: MetadataImage, alterations: Sequence[QuotaAlteration], *, validate_only: bool = False
) -> ControllerResult[list[QuotaAlterResult]]:
    """One result per entity of the request, in its order."""
    seen: set[ClientQuotaEntity] = set()
    records: list[MetadataRecord] = []
    results: list[QuotaAlterResult] = []
    for alteration in alterations:
        key = quota_entity(dict(alteration.entity))
        if key in seen:
            error = _invalid(f"Ignoring duplicate entity {dict(alteration.entity)}")
            results.append(QuotaAlterResult(alteration.entity, error))
            continue
        seen.add(key)
        entity_records, error = _entity_records(image, alteration)
        records += entity_records
        results.append(QuotaAlterResult(alteration.entity, error))
    return ControllerResult([] if validate_only else records, results)
