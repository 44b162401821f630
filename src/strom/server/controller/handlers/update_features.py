"""UpdateFeatures (API key 57), v0 to v1: change finalized feature levels (``kafka-features.sh
upgrade|downgrade|disable``, ``strom features``). Served by the controller (brokers forward it);
the controller decides (``strom.controller.features``) and the answer comes once the records
are committed. v0's ``AllowDowngrade`` is a safe downgrade; ``ValidateOnly`` (v1) writes
nothing. Every feature of the request gets the request's outcome: it is all or nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Final, Protocol

from kio.schema.update_features.v1 import request as newest
from kio.schema.update_features.v1 import response as latest
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode
from strom.controller import ApiError, FeatureUpdate, UpgradeType
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import as_newest, for_version, request_field
from strom.server.api.throttle import NO_THROTTLE

__all__ = ["UpdateFeaturesHandler", "error_response"]

log = logging.getLogger(__name__)


def parse_updates(body: object) -> list[FeatureUpdate]:
    request = as_newest(body, newest.UpdateFeaturesRequest)
    updates = []
    for update in request.feature_updates:
        downgrade = (
            UpgradeType.SAFE_DOWNGRADE
            if request_field(update, "allow_downgrade", False)
            else UpgradeType.UPGRADE
        )
        upgrade_type = int(request_field(update, "upgrade_type", downgrade))
        updates.append(FeatureUpdate(update.feature, int(update.max_version_level), upgrade_type))
    return updates


class FeaturesUpdater(Protocol):
    """What UpdateFeatures needs of the controller."""

    async def update_features(
        self, updates: Sequence[FeatureUpdate], *, validate_only: bool
    ) -> ApiError:
        """UpdateFeatures over the quorum; raises NotControllerError."""
        ...


class UpdateFeaturesHandler:
    api_key: Final = ApiKey.UPDATE_FEATURES
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.UPDATE_FEATURES]

    def __init__(self, controller: FeaturesUpdater) -> None:
        self._controller = controller

    async def handle(self, context: RequestContext) -> ResponsePayload:
        updates = parse_updates(context.body)
        validate_only = bool(request_field(context.body, "validate_only", False))
        outcome = await self._controller.update_features(updates, validate_only=validate_only)
        if outcome.is_success and not validate_only:
            log.info(
                "features updated for %s: %s",
                context.client_address,
                ", ".join(f"{u.name}={u.level}" for u in updates),
            )
        return _response(context, updates, outcome)


def error_response(context: RequestContext, code: ErrorCode) -> ResponsePayload:
    """Every feature of the request refused with ``code`` (the controller was not reached)."""
    return _response(context, parse_updates(context.body), ApiError(code))


def _response(
    context: RequestContext, updates: list[FeatureUpdate], outcome: ApiError
) -> ResponsePayload:
    response = latest.UpdateFeaturesResponse(
        throttle_time=NO_THROTTLE,
        error_code=outcome.code,
        error_message=outcome.message,
        results=tuple(
            latest.UpdatableFeatureResult(
                feature=update.name, error_code=outcome.code, error_message=outcome.message
            )
            for update in updates
        ),
    )
    return for_version(response, context.api_version)
