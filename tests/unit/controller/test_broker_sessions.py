"""Broker heartbeats: sessions on the active controller, fencing, unfencing, shutdown."""

from __future__ import annotations

import uuid

from controller_harness import Harness

from strom.common import ErrorCode
from strom.controller import (
    SUPPORTED_FEATURES,
    BrokerHeartbeat,
    BrokerRegistrationRequest,
    BrokerSessions,
)
from strom.metadata import BrokerEndpoint


def beat(h: Harness, broker_id: int, epoch: int, **flags: bool) -> tuple[bool, bool, bool]:
    reply = h.run(
        h.controller.broker_heartbeat(
            h.image,
            BrokerHeartbeat(
                broker_id=broker_id,
                broker_epoch=epoch,
                want_fence=flags.get("want_fence", False),
                want_shut_down=flags.get("want_shut_down", False),
                caught_up=flags.get("caught_up", True),
            ),
        )
    )
    assert reply.error.is_success, reply.error
    return reply.is_fenced, reply.is_caught_up, reply.should_shut_down


def test_a_caught_up_heartbeat_unfences_and_a_shutdown_fences() -> None:
    h = Harness()
    epoch = h.add_broker(1, fenced=True)

    def fenced() -> bool:
        return h.image.cluster.brokers[1].fenced

    assert beat(h, 1, epoch, caught_up=False) == (True, False, False)
    assert fenced()
    assert beat(h, 1, epoch, want_fence=True) == (True, True, False)
    assert beat(h, 1, epoch) == (False, True, False)
    assert not fenced()
    assert beat(h, 1, epoch) == (False, True, False)  # nothing changes, no record
    assert beat(h, 1, epoch, want_shut_down=True) == (True, True, True)
    assert fenced()


def test_a_heartbeat_of_an_old_epoch_is_stale() -> None:
    h = Harness()
    epoch = h.add_broker(1)
    reply = h.controller.broker_heartbeat(
        h.image,
        BrokerHeartbeat(
            broker_id=1,
            broker_epoch=epoch - 1,
            want_fence=False,
            want_shut_down=False,
            caught_up=True,
        ),
    ).response
    assert reply.error.code is ErrorCode.stale_broker_epoch


def test_an_alive_session_refuses_another_incarnation() -> None:
    h = Harness()
    h.add_broker(1)
    request = BrokerRegistrationRequest(
        broker_id=1,
        incarnation_id=uuid.UUID(int=99),
        endpoints=[BrokerEndpoint("PLAINTEXT", "h", 1)],
        features=SUPPORTED_FEATURES,
    )
    refused = h.controller.register_broker(h.image, request, alive=True).response
    assert refused.error.code is ErrorCode.duplicate_broker_registration
    assert h.controller.register_broker(h.image, request, alive=False).response.error.is_success


def test_sessions_expire_and_heartbeats_renew_them() -> None:
    h = Harness()
    epoch = h.add_broker(1)
    sessions = BrokerSessions(session_timeout_ms=100)
    sessions.registered(1, epoch=epoch, registration_offset=h.image.highest_offset, now_ms=0)
    assert sessions.is_alive(1, 50)
    assert sessions.next_expiry_ms(h.image) == 100
    assert sessions.expired(99, h.image) == []
    assert sessions.heartbeat(1, epoch=epoch, metadata_offset=h.image.highest_offset, now_ms=90)
    assert sessions.expired(150, h.image) == []
    assert sessions.expired(190, h.image) == [(1, epoch)]
    assert not sessions.is_alive(1, 190)
    # A heartbeat of another session neither renews nor catches up.
    assert not sessions.heartbeat(1, epoch=epoch + 1, metadata_offset=10**9, now_ms=200)
    assert sessions.expired(200, h.image) == [(1, epoch)]


def test_a_closed_heartbeat_connection_and_refusing_listeners_end_the_session() -> None:
    h = Harness()
    epoch = h.add_broker(1)
    offset = h.image.highest_offset
    sessions = BrokerSessions(session_timeout_ms=9000, close_grace_ms=1000)
    sessions.registered(1, epoch=epoch, registration_offset=offset, now_ms=0)
    sessions.heartbeat(1, epoch=epoch, metadata_offset=offset, now_ms=100, connection="a")
    assert sessions.connection_closed("b", 200) == []  # not the one it heartbeats on
    assert sessions.next_expiry_ms(h.image) == 9100
    assert sessions.connection_closed("a", 500) == [1]
    assert sessions.connection_lost(1)
    assert sessions.next_expiry_ms(h.image) == 9100  # no proof of death yet
    sessions.listeners_refused(1, 600)
    assert sessions.next_expiry_ms(h.image) == 1500
    assert sessions.is_alive(1, 1499)
    assert sessions.expired(1499, h.image) == []
    assert sessions.expired(1500, h.image) == [(1, epoch)]
    assert not sessions.is_alive(1, 1500)


def test_a_refusal_after_the_grace_ends_the_session_at_once() -> None:
    h = Harness()
    epoch = h.add_broker(1)
    offset = h.image.highest_offset
    sessions = BrokerSessions(session_timeout_ms=9000, close_grace_ms=1000)
    sessions.registered(1, epoch=epoch, registration_offset=offset, now_ms=0)
    sessions.heartbeat(1, epoch=epoch, metadata_offset=offset, now_ms=100, connection="a")
    sessions.connection_closed("a", 500)
    sessions.listeners_refused(1, 4000)
    assert sessions.expired(4000, h.image) == [(1, epoch)]


def test_a_closed_connection_of_a_broker_whose_listener_answers_waits_the_session() -> None:
    """A live broker too slow to heartbeat again within the grace keeps its session."""
    h = Harness()
    epoch = h.add_broker(1)
    offset = h.image.highest_offset
    sessions = BrokerSessions(session_timeout_ms=9000, close_grace_ms=0)
    sessions.registered(1, epoch=epoch, registration_offset=offset, now_ms=0)
    sessions.heartbeat(1, epoch=epoch, metadata_offset=offset, now_ms=100, connection="a")
    sessions.connection_closed("a", 500)
    assert sessions.expired(9099, h.image) == []
    sessions.listeners_refused(1, 600)  # a process on its way out...
    sessions.listeners_answered(1)  # ...but it answered later: the refusal is forgotten
    assert sessions.expired(9099, h.image) == []
    assert sessions.expired(9100, h.image) == [(1, epoch)]


def test_a_refusal_before_any_close_counts_for_nothing() -> None:
    h = Harness()
    epoch = h.add_broker(1)
    offset = h.image.highest_offset
    sessions = BrokerSessions(session_timeout_ms=9000, close_grace_ms=0)
    sessions.registered(1, epoch=epoch, registration_offset=offset, now_ms=0)
    sessions.heartbeat(1, epoch=epoch, metadata_offset=offset, now_ms=100, connection="a")
    sessions.listeners_refused(1, 200)
    assert sessions.expired(9099, h.image) == []


def test_a_heartbeat_within_the_grace_keeps_the_session() -> None:
    h = Harness()
    epoch = h.add_broker(1)
    offset = h.image.highest_offset
    sessions = BrokerSessions(session_timeout_ms=9000, close_grace_ms=1000)
    sessions.registered(1, epoch=epoch, registration_offset=offset, now_ms=0)
    sessions.heartbeat(1, epoch=epoch, metadata_offset=offset, now_ms=100, connection="a")
    sessions.connection_closed("a", 500)
    sessions.listeners_refused(1, 600)
    sessions.heartbeat(1, epoch=epoch, metadata_offset=offset, now_ms=900, connection="b")
    assert not sessions.connection_lost(1)
    assert sessions.expired(5000, h.image) == []
    assert sessions.next_expiry_ms(h.image) == 9900


def test_without_a_grace_a_closed_connection_changes_nothing() -> None:
    h = Harness()
    epoch = h.add_broker(1)
    offset = h.image.highest_offset
    sessions = BrokerSessions(session_timeout_ms=9000)
    sessions.registered(1, epoch=epoch, registration_offset=offset, now_ms=0)
    sessions.heartbeat(1, epoch=epoch, metadata_offset=offset, now_ms=100, connection="a")
    assert sessions.connection_closed("a", 500) == []
    assert sessions.expired(5000, h.image) == []


def test_caught_up_once_the_registration_is_read() -> None:
    sessions = BrokerSessions(session_timeout_ms=1000)
    sessions.registered(1, epoch=5, registration_offset=20, now_ms=0)
    assert not sessions.heartbeat(1, epoch=5, metadata_offset=19, now_ms=1)
    assert sessions.heartbeat(1, epoch=5, metadata_offset=20, now_ms=2)
    assert sessions.heartbeat(1, epoch=5, metadata_offset=3, now_ms=3)  # never goes back


def test_a_new_active_controller_renews_every_session_but_has_heard_from_none() -> None:
    h = Harness()
    h.add_broker(1)
    h.add_broker(2, fenced=True)
    sessions = BrokerSessions(session_timeout_ms=100)
    sessions.activate(h.image, now_ms=1000)
    assert sessions.expired(1099, h.image) == []
    assert [broker for broker, _ in sessions.expired(1100, h.image)] == [1]  # 2 is fenced
    assert not sessions.is_alive(1, 1001)  # a restarted broker 1 may register at once
