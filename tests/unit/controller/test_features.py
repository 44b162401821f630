"""UpdateFeatures on the controller: what it lets through and what it refuses."""

from __future__ import annotations

import uuid

import pytest
from controller_harness import Harness

from strom.common import ErrorCode
from strom.controller import (
    BrokerRegistrationRequest,
    FeatureUpdate,
    UpgradeType,
)
from strom.metadata import BrokerEndpoint, BrokerFeature

ELR = "eligible.leader.replicas.version"
MV = "metadata.version"


def levels(harness: Harness) -> dict[str, int]:
    return dict(harness.image.features.finalized_levels)


def test_a_downgrade_and_an_upgrade_are_written_and_applied() -> None:
    harness = Harness()
    harness.add_brokers([1, 2])
    assert levels(harness)[ELR] == 1
    down = [FeatureUpdate(ELR, 0, UpgradeType.SAFE_DOWNGRADE)]
    assert harness.run(
        harness.controller.update_features(harness.image, down, validate_only=True)
    ).is_success
    assert levels(harness)[ELR] == 1  # validate only: nothing written
    assert harness.run(
        harness.controller.update_features(harness.image, down, validate_only=False)
    ).is_success
    assert ELR not in levels(harness)  # level 0 removes the feature
    up = [FeatureUpdate(ELR, 1)]
    assert harness.run(
        harness.controller.update_features(harness.image, up, validate_only=False)
    ).is_success
    assert levels(harness)[ELR] == 1


@pytest.mark.parametrize(
    ("update", "message"),
    [
        (FeatureUpdate(ELR, 0, UpgradeType.UPGRADE), "cannot upgrade"),
        (FeatureUpdate(ELR, 2), "the controller does not support"),
        (FeatureUpdate("nope.version", 1), "the controller does not support"),
        (
            FeatureUpdate(MV, 11, UpgradeType.SAFE_DOWNGRADE),
            "metadata.version cannot be downgraded",
        ),
        (
            FeatureUpdate(MV, 11, UpgradeType.UNSAFE_DOWNGRADE),
            "metadata.version cannot be downgraded",
        ),
        (FeatureUpdate(ELR, 1, 7), "unknown upgrade type"),
        (FeatureUpdate(ELR, -1, UpgradeType.SAFE_DOWNGRADE), "negative"),
    ],
)
def test_refusals_write_nothing(update: FeatureUpdate, message: str) -> None:
    harness = Harness()
    harness.add_brokers([1])
    before = levels(harness)
    valid = FeatureUpdate(MV, 14) if update.name != MV else FeatureUpdate(ELR, 1)
    result = harness.controller.update_features(harness.image, [valid, update], validate_only=False)
    assert result.records == []
    assert result.response.code == ErrorCode.invalid_update_version
    assert message in (result.response.message or "")
    assert levels(harness) == before


def test_every_registered_broker_must_support_the_level() -> None:
    harness = Harness()
    harness.add_brokers([1])
    harness.run(
        harness.controller.update_features(
            harness.image, [FeatureUpdate(ELR, 0, UpgradeType.SAFE_DOWNGRADE)], validate_only=False
        )
    )
    old = BrokerRegistrationRequest(
        broker_id=2,
        incarnation_id=uuid.UUID(int=2),
        endpoints=[BrokerEndpoint("PLAINTEXT", "localhost", 9094)],
        features=(BrokerFeature(MV, 7, 14),),  # knows no eligible leader replicas
    )
    assert harness.run(harness.controller.register_broker(harness.image, old)).error.is_success
    result = harness.controller.update_features(
        harness.image, [FeatureUpdate(ELR, 1)], validate_only=False
    )
    assert result.response.message == f"broker 2 does not support {ELR} level 1"
    assert result.records == []
