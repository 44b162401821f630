"""ApiVersions: which APIs, at which versions, this broker serves (built from the handler table).

Kafka's rules, as ``KafkaApis.handleApiVersionsRequest`` applies them:

* a version the broker does not implement is answered with a v0 body, UNSUPPORTED_VERSION and the
  supported ranges (KIP-511), so that the client retries at a version both know; Kafka puts only
  ApiVersions' own range in that answer, strom puts all of them (clients read ApiVersions' entry
  and ignore the rest, and the issue asks for "the supported ranges");
* from v3 on, the client names its software; a name or version that is not
  ``[a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])?`` gets INVALID_REQUEST;
* the response header is always v0 (kio's response classes already say so).

From v3 on, the answer also holds the features (KIP-584): the ranges this node supports, the
cluster's finalized levels and the metadata offset they are as of (``finalized_features_epoch``,
-1 before any), as ``kafka-features.sh describe`` reads them. A handler built without
``features`` (the controller listener's) leaves them empty.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final

from kio.schema.api_versions.v0 import response as v0
from kio.schema.api_versions.v1 import response as v1
from kio.schema.api_versions.v2 import response as v2
from kio.schema.api_versions.v3 import response as v3
from kio.schema.api_versions.v4 import response as v4
from kio.schema.errors import ErrorCode
from kio.static.primitive import i16, i32Timedelta, i64
from kio.static.protocol import ResponsePayload

from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey, VersionRange
from strom.server.api.handler_table import HandlerTable, RequestContext

__all__ = ["ApiVersionsHandler", "Features", "build_response"]

SOFTWARE_NAME_OR_VERSION: Final = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")
_NO_THROTTLE: Final = i32Timedelta.parse(datetime.timedelta(0))


@dataclass(frozen=True, slots=True)
class Features:
    """The features of an ApiVersions answer: name -> (min, max) supported by this node, name ->
    finalized level, and the metadata offset the finalized levels are as of (-1: none)."""

    supported: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    finalized: Mapping[str, int] = field(default_factory=dict)
    epoch: int = -1


class ApiVersionsHandler:
    """Answers ApiVersions from a registry's version table (and ``features()``, see above)."""

    api_key: Final = ApiKey.API_VERSIONS
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.API_VERSIONS]

    def __init__(
        self, registry: HandlerTable, *, features: Callable[[], Features] | None = None
    ) -> None:
        self._registry = registry
        self._features = features

    async def handle(self, context: RequestContext) -> ResponsePayload:
        request = context.request
        served = self._registry.versions
        if request.unsupported_version:
            return build_response(0, ErrorCode.unsupported_version, served)
        version = request.api_version
        body = request.body
        if version >= 3:
            name = getattr(body, "client_software_name", "")
            software_version = getattr(body, "client_software_version", "")
            if not (
                SOFTWARE_NAME_OR_VERSION.fullmatch(name)
                and SOFTWARE_NAME_OR_VERSION.fullmatch(software_version)
            ):
                return build_response(version, ErrorCode.invalid_request, {})
        features = Features() if self._features is None or version < 3 else self._features()
        return build_response(version, ErrorCode.none, served, features)


def build_response(
    version: int,
    error_code: ErrorCode,
    served: Mapping[ApiKey, VersionRange],
    features: Features = Features(),
) -> ResponsePayload:
    """An ApiVersions response body of ``version`` listing ``served`` (and, v3+, ``features``)."""
    ranges = [
        (i16(api_key), i16(versions.min_version), i16(versions.max_version))
        for api_key, versions in sorted(served.items())
    ]
    if version == 0:
        return v0.ApiVersionsResponse(
            error_code=error_code,
            api_keys=tuple(
                v0.ApiVersion(api_key=k, min_version=lo, max_version=hi) for k, lo, hi in ranges
            ),
        )
    if version == 1:
        return v1.ApiVersionsResponse(
            error_code=error_code,
            api_keys=tuple(
                v1.ApiVersion(api_key=k, min_version=lo, max_version=hi) for k, lo, hi in ranges
            ),
            throttle_time=_NO_THROTTLE,
        )
    if version == 2:
        return v2.ApiVersionsResponse(
            error_code=error_code,
            api_keys=tuple(
                v2.ApiVersion(api_key=k, min_version=lo, max_version=hi) for k, lo, hi in ranges
            ),
            throttle_time=_NO_THROTTLE,
        )
    if version == 3:
        return v3.ApiVersionsResponse(
            error_code=error_code,
            api_keys=tuple(
                v3.ApiVersion(api_key=k, min_version=lo, max_version=hi) for k, lo, hi in ranges
            ),
            throttle_time=_NO_THROTTLE,
            supported_features=tuple(
                v3.SupportedFeatureKey(name=name, min_version=i16(lo), max_version=i16(hi))
                for name, (lo, hi) in sorted(features.supported.items())
            ),
            finalized_features_epoch=i64(features.epoch),
            finalized_features=tuple(
                v3.FinalizedFeatureKey(
                    name=name, max_version_level=i16(level), min_version_level=i16(level)
                )
                for name, level in sorted(features.finalized.items())
            ),
        )
    if version == 4:
        return v4.ApiVersionsResponse(
            error_code=error_code,
            api_keys=tuple(
                v4.ApiVersion(api_key=k, min_version=lo, max_version=hi) for k, lo, hi in ranges
            ),
            throttle_time=_NO_THROTTLE,
            supported_features=tuple(
                v4.SupportedFeatureKey(name=name, min_version=i16(lo), max_version=i16(hi))
                for name, (lo, hi) in sorted(features.supported.items())
            ),
            finalized_features_epoch=i64(features.epoch),
            finalized_features=tuple(
                v4.FinalizedFeatureKey(
                    name=name, max_version_level=i16(level), min_version_level=i16(level)
                )
                for name, level in sorted(features.finalized.items())
            ),
        )
    raise ValueError(f"no ApiVersions response v{version}")
