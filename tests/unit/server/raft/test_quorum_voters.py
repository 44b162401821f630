"""Where the quorum's nodes are (static voters, bootstrap servers, the voter set in the log, a
leader found through a bootstrap server) and the first voters ``--initial-controllers`` names."""

from __future__ import annotations

import uuid

import pytest
from kio.schema.errors import ErrorCode

from strom.config import ConfigError
from strom.raft import LeaderAndEpoch, messages
from strom.raft.voters import Endpoint, VoterNode, VoterSet
from strom.server.configs.node_config import HostPort
from strom.server.raft.quorum_voters import (
    QuorumAddresses,
    directory_uuid,
    kafka_uuid,
    parse_initial_controllers,
)

VOTER = VoterNode(
    7,
    uuid.UUID(int=7),
    (Endpoint("OTHER", "o7", 1), Endpoint("CONTROLLER", "c7", 9093)),
)


def _addresses() -> QuorumAddresses:
    return QuorumAddresses(
        voters={1: HostPort("c1", 9093)},
        bootstrap=(HostPort("b1", 9093), HostPort("b2", 9093)),
        listener_name="CONTROLLER",
        voter_set=lambda: VoterSet.of([VOTER]),
    )


def _fetch_answer(leader: int, error: int = 0) -> object:
    state = messages.FetchAnswer(LeaderAndEpoch(leader, 3), 10, 0)
    return messages.fetch_answer(state, ErrorCode(error))


def test_static_bootstrap_and_log_voters_are_found() -> None:
    addresses = _addresses()
    assert addresses.bootstrap_ids == (-1, -2)
    assert addresses.address_of(1) == ("c1", 9093)
    assert addresses.address_of(-2) == ("b2", 9093)
    assert addresses.address_of(-3) is None
    assert addresses.address_of(7) == ("c7", 9093)  # the controller listener's endpoint
    assert addresses.address_of(9) is None


def test_a_bootstrap_server_that_answers_a_fetch_is_the_leader_it_names() -> None:
    addresses = _addresses()
    addresses.learn(-1, _fetch_answer(9, error=6))  # not the leader: it only names one
    assert addresses.address_of(9) is None
    addresses.learn(-2, _fetch_answer(9))
    assert addresses.address_of(9) == ("b2", 9093)


def test_initial_controllers_are_parsed_with_their_directory_ids() -> None:
    directory = kafka_uuid(uuid.UUID(int=5))
    voters = parse_initial_controllers(
        f"1@h1:9093:{directory},2@[::1]:9094:{directory}", listener_name="CONTROLLER"
    )
    assert voters.ids == {1, 2}
    node = voters.get(2)
    assert node is not None and node.endpoints == (Endpoint("CONTROLLER", "[::1]", 9094),)
    assert directory_uuid(directory) == uuid.UUID(int=5)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "1@h:9093",
        "x@h:1:AAAAAAAAAAAAAAAAAAAAAA",
        "1@h:1:AAAAAAAAAAAAAAAAAAAAAA,1@g:1:AAAAAAAAAAAAAAAAAAAAAA",
    ],
)
def test_bad_initial_controllers_are_refused(text: str) -> None:
    with pytest.raises(ConfigError):
        parse_initial_controllers(text, listener_name="CONTROLLER")
