"""Each real client's flow, live against ``strom server`` through a recording proxy.

Every request and answer is checked (``wire_checks``), with names of two lengths, and the API
versions each client uses must be the golden frames' (re-run ``capture.py`` after a client
upgrade changes them).
"""

from __future__ import annotations

import pytest
from flows import FLOWS, Names, record_flow
from golden_frames import golden_frames
from wire_checks import check_exchanges

from strom.protocol.api import ApiKey

TIMING_DEPENDENT = {ApiKey.HEARTBEAT}
"""Sent or not depending on how long a flow's consumer lives."""


@pytest.mark.parametrize("length", [1, 150], ids=["short-names", "long-names"])
@pytest.mark.parametrize("client", list(FLOWS))
def test_client_flow_on_the_wire(client: str, length: int) -> None:
    exchanges = record_flow(client, Names.of_length(client, length))
    seen = check_exchanges([(exchange.request, exchange.response) for exchange in exchanges])
    golden = {frame.api_key_and_version for frame in golden_frames(client)}
    assert {pair for pair in seen if pair[0] not in TIMING_DEPENDENT} == {
        pair for pair in golden if pair[0] not in TIMING_DEPENDENT
    }, "the client's API versions changed: re-run tests/golden/capture.py"
