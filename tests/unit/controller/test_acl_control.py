"""CreateAcls and DeleteAcls on the controller, and ACLs in the metadata image."""

from __future__ import annotations

import random
import uuid

import pytest

from strom.common import ErrorCode
from strom.controller.acl_control import create_acls, delete_acls
from strom.metadata import MetadataDelta, MetadataImage
from strom.metadata.delta import MetadataReplayError
from strom.metadata.records import MetadataRecord, RemoveAccessControlEntryRecord
from strom.security.acls import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)

READ = AclBinding(
    ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:alice", "*",
    AclOperation.READ, AclPermissionType.ALLOW,
)  # fmt: skip
WRITE = AclBinding(
    ResourceType.TOPIC, "ord", PatternType.PREFIXED, "User:bob", "*",
    AclOperation.WRITE, AclPermissionType.ALLOW,
)  # fmt: skip


def apply(image: MetadataImage, records: list[MetadataRecord]) -> MetadataImage:
    delta = MetadataDelta(image)
    for record in records:
        delta.replay(record)
    return delta.apply()


def test_created_acls_enter_the_image_once() -> None:
    empty = MetadataImage.empty()
    result = create_acls(empty, [READ, WRITE, READ], random.Random(1))
    assert [error.code for error in result.response] == [ErrorCode.none] * 3
    assert len(result.records) == 2
    image = apply(empty, list(result.records))
    assert sorted(image.acls.acls.values(), key=str) == sorted([READ, WRITE], key=str)
    again = create_acls(image, [READ], random.Random(2))
    assert again.records == [] and again.response[0].code is ErrorCode.none
    assert list(image.records())[-2:] == list(image.acls.records())


def test_invalid_acls_are_refused() -> None:
    bad = AclBinding(
        ResourceType.ANY, "x", PatternType.LITERAL, "User:a", "*",
        AclOperation.READ, AclPermissionType.ALLOW,
    )  # fmt: skip
    result = create_acls(MetadataImage.empty(), [bad, READ], random.Random(1))
    assert [error.code for error in result.response] == [ErrorCode.invalid_request, ErrorCode.none]
    assert len(result.records) == 1


def test_delete_filters_remove_what_they_match() -> None:
    empty = MetadataImage.empty()
    image = apply(empty, list(create_acls(empty, [READ, WRITE], random.Random(1)).records))
    by_principal = AclBindingFilter(principal="User:bob")
    everything = AclBindingFilter()
    result = delete_acls(image, [by_principal, everything])
    assert result.response[0].deleted == (WRITE,)
    assert len(result.response[1].deleted) == 2
    assert len(result.records) == 2  # each ACL removed once
    assert apply(image, list(result.records)).acls.acls == {}
    unknown = delete_acls(image, [AclBindingFilter(pattern_type=PatternType.UNKNOWN)])
    assert unknown.response[0].error.code is ErrorCode.invalid_request


def test_removing_an_unknown_acl_is_a_replay_error() -> None:
    with pytest.raises(MetadataReplayError):
        apply(MetadataImage.empty(), [RemoveAccessControlEntryRecord(id=uuid.uuid4())])
