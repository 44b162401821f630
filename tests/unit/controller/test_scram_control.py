"""AlterUserScramCredentials on the controller, and SCRAM credentials in the metadata image."""

from __future__ import annotations

import pytest

from strom.common import ErrorCode
from strom.controller.scram_control import ScramDeletion, ScramUpsertion, alter_scram_credentials
from strom.metadata import MetadataDelta, MetadataImage
from strom.metadata.delta import MetadataReplayError
from strom.metadata.records import RemoveUserScramCredentialRecord, UserScramCredentialRecord
from strom.security.scram import ScramMechanism, credential_from_salted_password

SHA256, SHA512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512


def upsert(name: str, mechanism: int = SHA256, iterations: int = 4096) -> ScramUpsertion:
    return ScramUpsertion(name, mechanism, iterations, b"salt", b"salted-password")


def apply(image: MetadataImage, records: object) -> MetadataImage:
    delta = MetadataDelta(image)
    for record in records:  # type: ignore[attr-defined]
        delta.replay(record)
    return delta.apply()


def with_user_a() -> MetadataImage:
    empty = MetadataImage.empty()
    return apply(empty, alter_scram_credentials(empty, [], [upsert("a")]).records)


def test_upsertions_become_credentials_without_the_password() -> None:
    result = alter_scram_credentials(
        MetadataImage.empty(), [], [upsert("alice"), upsert("bob", SHA512, 8192)]
    )
    assert [(r.user, r.error.code) for r in result.response] == [
        ("alice", ErrorCode.none),
        ("bob", ErrorCode.none),
    ]
    record = result.records[0]
    assert isinstance(record, UserScramCredentialRecord)
    expected = credential_from_salted_password(SHA256, b"salted-password", b"salt", 4096)
    assert (record.stored_key, record.server_key) == (expected.stored_key, expected.server_key)
    image = apply(MetadataImage.empty(), result.records)
    assert image.scram.mechanisms_of("bob") == {SHA512: 8192}
    assert image.scram.credential(SHA256, "alice") == expected
    assert list(image.scram.records()) == list(result.records)


def test_validation_as_kafka() -> None:
    image = apply(
        MetadataImage.empty(),
        alter_scram_credentials(MetadataImage.empty(), [], [upsert("a")]).records,
    )
    result = alter_scram_credentials(
        image,
        [ScramDeletion("ghost", SHA256), ScramDeletion("a", SHA256), ScramDeletion("", SHA256)],
        [
            upsert("a"),
            upsert("weak", iterations=1000),
            upsert("strong", iterations=20000),
            upsert("odd", mechanism=3),
        ],
    )
    assert not result.records
    errors = {r.user: (r.error.code, r.error.message) for r in result.response}
    assert errors == {
        "ghost": (
            ErrorCode.resource_not_found,
            "Attempt to delete a user credential that does not exist",
        ),
        "a": (
            ErrorCode.duplicate_resource,
            "A user credential cannot be altered twice in the same request",
        ),
        "": (ErrorCode.unacceptable_credential, "Username must not be empty"),
        "weak": (ErrorCode.unacceptable_credential, "Too few iterations"),
        "strong": (ErrorCode.unacceptable_credential, "Too many iterations"),
        "odd": (ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"),
    }


def test_deletion_removes_the_credential_and_a_missing_one_cannot_be_replayed() -> None:
    image = apply(
        MetadataImage.empty(),
        alter_scram_credentials(MetadataImage.empty(), [], [upsert("a")]).records,
    )
    result = alter_scram_credentials(image, [ScramDeletion("a", SHA256)], [])
    assert result.records == [RemoveUserScramCredentialRecord(name="a", mechanism=SHA256)]
    assert apply(image, result.records).scram.mechanisms_of("a") == {}
    with pytest.raises(MetadataReplayError, match="no SCRAM-SHA-512 credential of user a"):
        apply(image, [RemoveUserScramCredentialRecord(name="a", mechanism=SHA512)])
