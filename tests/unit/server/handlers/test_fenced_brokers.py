"""RecentlyFenced: a broker seen going from unfenced to fenced is listed for a few seconds more;
a broker registered fenced (a new start) or unfenced again is not, nor one whose fence a
restarting broker replays before it serves."""

from __future__ import annotations

import uuid

from strom.common.clock import ManualClock
from strom.metadata import (
    BrokerEndpoint,
    FenceBrokerRecord,
    MetadataDelta,
    MetadataImage,
    MetadataProvenance,
    MetadataRecord,
    RegisterBrokerRecord,
    UnfenceBrokerRecord,
)
from strom.server.handlers.fenced_brokers import LISTED_AFTER_FENCE_MS, RecentlyFenced


def _apply(image: MetadataImage, *records: MetadataRecord) -> tuple[MetadataDelta, MetadataImage]:
    delta = MetadataDelta(image)
    for record in records:
        delta.replay(record)
    offset = image.highest_offset + len(records)
    return delta, delta.apply(MetadataProvenance(offset=offset, epoch=1))


def _register(broker_id: int, epoch: int) -> RegisterBrokerRecord:
    return RegisterBrokerRecord(
        broker_id=broker_id,
        incarnation_id=uuid.UUID(int=epoch),
        broker_epoch=epoch,
        endpoints=(BrokerEndpoint("PLAINTEXT", "localhost", 9090 + broker_id),),
    )


def test_a_fenced_broker_is_listed_for_a_while() -> None:
    clock = ManualClock()
    recently = RecentlyFenced(clock, lambda: (1, 10))
    image = MetadataImage.empty()
    steps: list[tuple[MetadataRecord, ...]] = [
        (_register(1, 10), _register(2, 11)),
        (UnfenceBrokerRecord(1, 10), UnfenceBrokerRecord(2, 11)),
    ]
    for records in steps:
        delta, image = _apply(image, *records)
        recently(delta, image)
    assert recently.listed() == frozenset()
    clock.advance(100)
    delta, image = _apply(image, FenceBrokerRecord(2, 11))
    recently(delta, image)
    assert recently.listed() == {2}
    clock.advance(LISTED_AFTER_FENCE_MS - 1)
    delta, image = _apply(image, _register(3, 12))  # another change: still listed
    recently(delta, image)
    assert recently.listed() == {2}
    clock.advance(1)
    assert recently.listed() == frozenset()


def test_a_new_start_or_an_unfence_is_no_fence() -> None:
    clock = ManualClock()
    recently = RecentlyFenced(clock, lambda: (5, 5))
    image = MetadataImage.empty()
    steps: list[tuple[MetadataRecord, ...]] = [
        (_register(5, 5), _register(1, 10)),
        (UnfenceBrokerRecord(5, 5), UnfenceBrokerRecord(1, 10)),
        (FenceBrokerRecord(1, 10),),
    ]
    for records in steps:
        delta, image = _apply(image, *records)
        recently(delta, image)
    assert recently.listed() == {1}
    delta, image = _apply(image, _register(1, 20))  # restarted: a new epoch, fenced
    recently(delta, image)
    assert recently.listed() == frozenset()
    delta, image = _apply(image, UnfenceBrokerRecord(1, 20))
    recently(delta, image)
    assert recently.listed() == frozenset()


def test_fences_replayed_before_this_broker_serves_are_history() -> None:
    """Broker 1 restarts as epoch 30: its old log has broker 3 unfenced, the catch-up brings
    broker 3's fence from long ago, then broker 1's new registration and unfence."""
    clock = ManualClock()
    recently = RecentlyFenced(clock, lambda: (1, 30))
    image = MetadataImage.empty()
    steps: list[tuple[MetadataRecord, ...]] = [
        (_register(1, 10), _register(3, 12)),
        (UnfenceBrokerRecord(1, 10), UnfenceBrokerRecord(3, 12)),
        (FenceBrokerRecord(1, 10),),
        (FenceBrokerRecord(3, 12),),
        (_register(1, 30),),
        (UnfenceBrokerRecord(1, 30),),
    ]
    for records in steps:
        delta, image = _apply(image, *records)
        recently(delta, image)
        assert recently.listed() == frozenset()
    delta, image = _apply(image, _register(3, 40), UnfenceBrokerRecord(3, 40))
    recently(delta, image)
    delta, image = _apply(image, FenceBrokerRecord(3, 40))  # seen while serving: listed
    recently(delta, image)
    assert recently.listed() == {3}
