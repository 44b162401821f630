"""DescribeQuorum (API key 55), v0 to v2: the quorum's leader, epoch, high watermark, and each
voter's and observer's log end offset and fetch times.

The active controller answers it from its Raft client (``RaftManager``, on the controller
listener); a broker forwards it there. This module holds what a broker answers when no controller
can be reached.
"""

from __future__ import annotations

from kio.schema.describe_quorum.v2 import response as latest
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode
from strom.server.api.handler_table import RequestContext
from strom.server.api.kio_entities import for_version

__all__ = ["error_response"]


def error_response(context: RequestContext, code: ErrorCode) -> ResponsePayload:
    """The request refused as a whole with ``code``."""
    response = latest.DescribeQuorumResponse(
        error_code=code,
        error_message=f"{code.name}: no active controller answered",
        topics=(),
        nodes=(),
    )
    return for_version(response, context.api_version)
