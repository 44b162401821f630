"""Bootstrap, broker registration and fencing, producer id blocks."""

from __future__ import annotations

import random
import uuid

import pytest
from controller_harness import Harness

from strom.common import ErrorCode
from strom.controller import (
    DEFAULT_METADATA_VERSION,
    PRODUCER_ID_BLOCK_SIZE,
    SUPPORTED_FEATURES,
    BrokerRegistrationRequest,
    ControllerSettings,
    QuorumController,
)
from strom.metadata import (
    BrokerEndpoint,
    BrokerFeature,
    BrokerRegistrationChangeRecord,
    FeatureLevelRecord,
    MetadataImage,
    MetadataLoader,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    append_records,
)

ENDPOINT = BrokerEndpoint("PLAINTEXT", "localhost", 9092)


def registration(broker_id: int = 1, **changes: object) -> BrokerRegistrationRequest:
    fields: dict[str, object] = {
        "broker_id": broker_id,
        "incarnation_id": uuid.UUID(int=7),
        "endpoints": [ENDPOINT],
        "features": SUPPORTED_FEATURES,
    }
    fields.update(changes)
    return BrokerRegistrationRequest(**fields)  # type: ignore[arg-type]


def test_bootstrap_writes_the_metadata_version_once() -> None:
    controller = QuorumController(ControllerSettings(), random=random.Random(0))
    result = controller.bootstrap(MetadataImage.empty())
    assert result.records == [
        FeatureLevelRecord("metadata.version", DEFAULT_METADATA_VERSION),
        FeatureLevelRecord("eligible.leader.replicas.version", 1),
    ]
    h = Harness()
    assert h.image.features.metadata_version == DEFAULT_METADATA_VERSION
    assert h.controller.bootstrap(h.image).records == []


def test_a_broker_registers_fenced_then_is_unfenced() -> None:
    h = Harness()
    result = h.controller.register_broker(h.image, registration(rack="r1"))
    [record] = result.records
    assert isinstance(record, RegisterBrokerRecord)
    assert record.fenced
    assert record.rack == "r1"
    epoch = result.response.broker_epoch
    assert epoch == h.image.highest_offset + 1
    h.run(result)
    assert h.log.next_offset - 1 == epoch, "the epoch is the register record's offset"
    broker = h.image.cluster.broker(1)
    assert broker is not None
    assert broker.fenced and not broker.active
    assert broker.endpoint("PLAINTEXT") == ENDPOINT

    unfence = h.controller.unfence_broker(h.image, broker_id=1, broker_epoch=epoch)
    assert unfence.records == [
        BrokerRegistrationChangeRecord(broker_id=1, broker_epoch=epoch, fenced=-1)
    ]
    h.run(unfence)
    assert h.image.cluster.active_broker_ids() == (1,)
    assert h.controller.unfence_broker(h.image, broker_id=1, broker_epoch=epoch).records == []
    h.run(h.controller.fence_broker(h.image, broker_id=1, broker_epoch=epoch))
    assert h.image.cluster.active_broker_ids() == ()


def test_re_registration_gets_a_higher_epoch() -> None:
    h = Harness()
    first = h.add_broker(1)
    second = h.add_broker(1)
    assert second > first
    broker = h.image.cluster.broker(1)
    assert broker is not None
    assert broker.epoch == second
    assert not broker.fenced
    # Even where the log offset says less, the epoch stays above the previous one.
    without_offset = MetadataImage(cluster=h.image.cluster)
    reply = h.controller.register_broker(without_offset, registration()).response
    assert reply.broker_epoch == second + 1


@pytest.mark.parametrize(
    ("request_", "code", "message"),
    [
        (registration(-1), ErrorCode.invalid_request, "must not be negative"),
        (
            registration(endpoints=[ENDPOINT, ENDPOINT]),
            ErrorCode.invalid_request,
            "same name",
        ),
        (
            registration(features=()),
            ErrorCode.unsupported_version,
            "eligible.leader.replicas.version at level 1, but the broker supports levels 0 to 0",
        ),
        (
            registration(
                features=(
                    BrokerFeature("eligible.leader.replicas.version", 0, 1),
                    BrokerFeature("metadata.version", 1, 5),
                )
            ),
            ErrorCode.unsupported_version,
            "supports levels 1 to 5",
        ),
    ],
)
def test_registration_errors(
    request_: BrokerRegistrationRequest, code: ErrorCode, message: str
) -> None:
    h = Harness()
    result = h.controller.register_broker(h.image, request_)
    assert result.records == []
    assert result.response.error.code is code
    assert message in (result.response.error.message or "")


@pytest.mark.parametrize("fence", [False, True])
def test_fencing_needs_the_current_epoch(fence: bool) -> None:
    h = Harness()
    epoch = h.add_broker(1, fenced=not fence)
    operation = h.controller.fence_broker if fence else h.controller.unfence_broker
    for broker_id, broker_epoch, message in [
        (2, epoch, "broker 2 is not registered"),
        (1, epoch - 1, f"broker 1 is at epoch {epoch}, not {epoch - 1}"),
    ]:
        result = operation(h.image, broker_id=broker_id, broker_epoch=broker_epoch)
        assert result.records == []
        assert result.response.code is ErrorCode.stale_broker_epoch
        assert result.response.message == message


def test_producer_id_blocks_never_overlap_across_restarts() -> None:
    h = Harness()
    epoch = h.add_broker(1)
    first = h.run(h.controller.allocate_producer_ids(h.image, broker_id=1, broker_epoch=epoch))
    assert (first.first_producer_id, first.size, first.assigned_broker_id) == (
        0,
        PRODUCER_ID_BLOCK_SIZE,
        1,
    )
    second = h.run(h.controller.allocate_producer_ids(h.image, broker_id=1, broker_epoch=epoch))
    assert second.first_producer_id == PRODUCER_ID_BLOCK_SIZE
    # A restart: a new loader reads the same log; the next block continues after the last.
    restarted = MetadataLoader()
    restarted.catch_up(h.log)
    assert restarted.image == h.image
    new_epoch = h.controller.register_broker(restarted.image, registration())
    h.run(new_epoch)
    third = h.run(
        h.controller.allocate_producer_ids(
            h.image, broker_id=1, broker_epoch=new_epoch.response.broker_epoch
        )
    )
    assert third.first_producer_id == 2 * PRODUCER_ID_BLOCK_SIZE


def test_producer_ids_need_a_registered_broker_at_its_epoch() -> None:
    h = Harness()
    epoch = h.add_broker(1)
    for broker_id, broker_epoch in [(2, epoch), (1, epoch + 5)]:
        result = h.controller.allocate_producer_ids(
            h.image, broker_id=broker_id, broker_epoch=broker_epoch
        )
        assert result.records == []
        assert result.response.error.code is ErrorCode.stale_broker_epoch


def test_producer_ids_run_out_at_the_end_of_int64() -> None:
    h = Harness()
    epoch = h.add_broker(1)
    h.run(h.controller.allocate_producer_ids(h.image, broker_id=1, broker_epoch=epoch))
    near_end = 2**63 - 1 - PRODUCER_ID_BLOCK_SIZE + 1
    h.loader.apply_batch(
        append_records(
            h.log, [ProducerIdsRecord(broker_id=1, broker_epoch=epoch, next_producer_id=near_end)]
        )
    )
    result = h.controller.allocate_producer_ids(h.image, broker_id=1, broker_epoch=epoch)
    assert result.records == []
    assert result.response.error.code is ErrorCode.unknown_server_error
