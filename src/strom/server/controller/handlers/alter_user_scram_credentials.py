"""AlterUserScramCredentials (API key 51), v0: set or delete users' SCRAM credentials (KIP-554).

Served by the controller (``strom.controller.scram_control`` validates and writes the records);
brokers forward it. The client sends the salted password, never the password itself.
"""

from __future__ import annotations

import logging
from typing import Final

from kio.schema.alter_user_scram_credentials.v0 import request as newest
from kio.schema.alter_user_scram_credentials.v0 import response as latest
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode
from strom.controller.results import ApiError
from strom.controller.scram_control import (
    ScramAlterResult,
    ScramDeletion,
    ScramUpsertion,
    alter_scram_credentials,
)
from strom.protocol.api import KAFKA_BROKER_VERSIONS, ApiKey
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import as_newest
from strom.server.api.throttle import NO_THROTTLE
from strom.server.controller.controller_server import OperationRunner

__all__ = ["AlterUserScramCredentialsHandler", "error_response"]

log = logging.getLogger(__name__)


def _changes(body: object) -> tuple[list[ScramDeletion], list[ScramUpsertion]]:
    request = as_newest(body, newest.AlterUserScramCredentialsRequest)
    deletions = [ScramDeletion(d.name, int(d.mechanism)) for d in request.deletions]
    upsertions = [
        ScramUpsertion(u.name, int(u.mechanism), int(u.iterations), u.salt, u.salted_password)
        for u in request.upsertions
    ]
    return deletions, upsertions


class AlterUserScramCredentialsHandler:
    api_key: Final = ApiKey.ALTER_USER_SCRAM_CREDENTIALS
    versions: Final = KAFKA_BROKER_VERSIONS[ApiKey.ALTER_USER_SCRAM_CREDENTIALS]

    def __init__(self, controller: OperationRunner) -> None:
        self._controller = controller

    async def handle(self, context: RequestContext) -> ResponsePayload:
        deletions, upsertions = _changes(context.body)
        results = await self._controller.run(
            "alter user SCRAM credentials",
            lambda image: alter_scram_credentials(image, deletions, upsertions),
        )
        for result in results:
            if result.error.is_success:
                log.info(
                    "SCRAM credentials of user %s altered by %s", result.user, context.principal
                )
        return _response(results)


def error_response(context: RequestContext, code: ErrorCode) -> ResponsePayload:
    deletions, upsertions = _changes(context.body)
    users = dict.fromkeys([d.name for d in deletions] + [u.name for u in upsertions])
    return _response([ScramAlterResult(user, ApiError(code, None)) for user in users])


def _response(results: list[ScramAlterResult]) -> ResponsePayload:
    return latest.AlterUserScramCredentialsResponse(
        throttle_time=NO_THROTTLE,
        results=tuple(
            latest.AlterUserScramCredentialsResult(
                user=result.user, error_code=result.error.code, error_message=result.error.message
            )
            for result in results
        ),
    )
