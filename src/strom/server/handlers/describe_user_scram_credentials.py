"""DescribeUserScramCredentials (API key 50), v0: users' SCRAM mechanisms and iterations.

From the broker's metadata image, as Kafka answers it: no users (null or empty) describes every
user with a credential; a named user without one is RESOURCE_NOT_FOUND, a user named twice
DUPLICATE_RESOURCE. Salts and keys are never shown.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Final

from kio.schema.describe_user_scram_credentials.v0 import request as newest
from kio.schema.describe_user_scram_credentials.v0 import response as latest
from kio.static.primitive import i8, i32
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode
from strom.metadata.image import MetadataImage
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import as_newest
from strom.server.api.throttle import NO_THROTTLE

__all__ = ["DescribeUserScramCredentialsHandler"]


class DescribeUserScramCredentialsHandler:
    api_key: Final = ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS]

    def __init__(self, image: Callable[[], MetadataImage]) -> None:
        self._image = image

    async def handle(self, context: RequestContext) -> ResponsePayload:
        request = as_newest(context.body, newest.DescribeUserScramCredentialsRequest)
        scram = self._image().scram
        if not request.users:
            names = sorted({user for _, user in scram.credentials})
        else:
            names = list(dict.fromkeys(user.name for user in request.users))
        counts = Counter(user.name for user in request.users or ())
        results = []
        for name in names:
            mechanisms = scram.mechanisms_of(name)
            error, message = ErrorCode.none, None
            if counts[name] > 1:
                error = ErrorCode.duplicate_resource
                message = (
                    "Cannot describe SCRAM credentials for the same user twice in a single request"
                )
            elif not mechanisms:
                error = ErrorCode.resource_not_found
                message = "Attempt to describe a user credential that does not exist"
            results.append(
                latest.DescribeUserScramCredentialsResult(
                    user=name,
                    error_code=error,
                    error_message=message,
                    credential_infos=()
                    if error is not ErrorCode.none
                    else tuple(
                        latest.CredentialInfo(mechanism=i8(mechanism), iterations=i32(iterations))
                        for mechanism, iterations in mechanisms.items()
                    ),
                )
            )
        return latest.DescribeUserScramCredentialsResponse(
            throttle_time=NO_THROTTLE,
            error_code=ErrorCode.none,
            error_message=None,
            results=tuple(results),
        )
