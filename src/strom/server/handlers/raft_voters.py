"""AddRaftVoter (API key 80) and RemoveRaftVoter (81), KIP-853: the quorum's leader answers them
(``strom.raft.voter_changes``, on the controller listener); a broker forwards them there. This
module holds what a broker answers when no controller can be reached."""

from __future__ import annotations

import datetime

from kio.schema.add_raft_voter.v0 import response as add_response
from kio.schema.remove_raft_voter.v0 import response as remove_response
from kio.static.primitive import i32Timedelta
from kio.static.protocol import ResponsePayload

from strom.common import ErrorCode
from strom.server.api.handler_table import RequestContext

__all__ = ["add_error_response", "remove_error_response"]

_ZERO = i32Timedelta.parse(datetime.timedelta(0))


def add_error_response(context: RequestContext, code: ErrorCode) -> ResponsePayload:
    return add_response.AddRaftVoterResponse(
        throttle_time=_ZERO,
        error_code=code,
        error_message=f"{code.name}: no active controller answered",
    )


def remove_error_response(context: RequestContext, code: ErrorCode) -> ResponsePayload:
    return remove_response.RemoveRaftVoterResponse(
        throttle_time=_ZERO,
        error_code=code,
        error_message=f"{code.name}: no active controller answered",
    )
