"""UpdateFeatures: changing finalized feature levels (KIP-584), as Kafka's
``FeatureControlManager`` decides it.

A level must be supported by this controller and by every registered broker (level 0 removes
the feature, which needs no support). An upgrade may not lower a level, a downgrade may not
raise one. ``metadata.version`` cannot be removed, and strom refuses its downgrades (Kafka
refuses unsafe ones and allows safe ones only between compatible levels; strom has none). The
request is all or nothing: the first refusal fails it and nothing is written.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from strom.common import ErrorCode
from strom.controller.results import ApiError, ControllerResult
from strom.controller.settings import SUPPORTED_FEATURES
from strom.metadata import METADATA_VERSION_FEATURE, FeatureLevelRecord, MetadataImage

__all__ = ["FeatureUpdate", "UpgradeType", "update_features"]


class UpgradeType(enum.IntEnum):
    """UpdateFeatures v1's ``UpgradeType`` (v0's ``AllowDowngrade`` maps to 1 or 2)."""

    UPGRADE = 1
    SAFE_DOWNGRADE = 2
    UNSAFE_DOWNGRADE = 3


@dataclass(frozen=True, slots=True)
class FeatureUpdate:
    name: str
    level: int
    upgrade_type: int = UpgradeType.UPGRADE


def _invalid(message: str) -> ApiError:
    return ApiError(ErrorCode.invalid_update_version, message)


def _check(image: MetadataImage, update: FeatureUpdate) -> ApiError:
    name, level = update.name, update.level
    if update.upgrade_type not in set(UpgradeType):
        return _invalid(f"unknown upgrade type {update.upgrade_type} for {name}")
    if level < 0:
        return _invalid(f"{name}: a level cannot be negative")
    if level > 0:
        supported = {f.name: f for f in SUPPORTED_FEATURES}.get(name)
        if supported is None or not (
            supported.min_supported_version <= level <= supported.max_supported_version
        ):
            return _invalid(f"the controller does not support {name} level {level}")
        for broker in sorted(image.cluster.brokers.values(), key=lambda b: b.id):
            ranges = {f.name: f for f in broker.features}
            found = ranges.get(name)
            if found is None or not (
                found.min_supported_version <= level <= found.max_supported_version
            ):
                return _invalid(f"broker {broker.id} does not support {name} level {level}")
    current = image.features.finalized_levels.get(name, 0)
    if level < current and update.upgrade_type == UpgradeType.UPGRADE:
        return _invalid(f"cannot upgrade {name} from {current} to the lower level {level}")
    if level > current and update.upgrade_type != UpgradeType.UPGRADE:
        return _invalid(f"cannot downgrade {name} from {current} to the higher level {level}")
    if name == METADATA_VERSION_FEATURE and level < current:
        return _invalid("metadata.version cannot be downgraded")
    return ApiError()


def update_features(
    image: MetadataImage, updates: Sequence[FeatureUpdate], *, validate_only: bool
) -> ControllerResult[ApiError]:
    """The records of ``updates`` (none when ``validate_only``) and the outcome of all of them."""
    names = [update.name for update in updates]
    if len(set(names)) < len(names):
        return ControllerResult([], _invalid("a feature is named more than once"))
    for update in updates:
        error = _check(image, update)
        if error.is_failure:
            return ControllerResult([], error)
    records = [
        FeatureLevelRecord(name=update.name, feature_level=update.level)
        for update in updates
        if image.features.finalized_levels.get(update.name, 0) != update.level
    ]
    return ControllerResult([] if validate_only else records, ApiError())
