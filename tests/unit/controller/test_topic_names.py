from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strom.common import ErrorCode, KafkaError
from strom.controller.topic_names import (
    MAX_NAME_LENGTH,
    CollisionIndex,
    has_collision_chars,
    invalid_topic_reason,
    is_internal,
    unify_collision_chars,
    validate_topic_name,
)

LEGAL = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"


@pytest.mark.parametrize(
    "name", ["a", "orders", "my.topic", "my_topic", "my-topic", "...", "_", "x" * 249, "A9._-"]
)
def test_legal_names(name: str) -> None:
    assert invalid_topic_reason(name) is None
    validate_topic_name(name)


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("", "cannot be empty"),
        (".", "'.' cannot be a topic name"),
        ("..", "'..' cannot be a topic name"),
        ("x" * 250, "250 characters is longer than the limit of 249"),
        ("a b", "may only contain ASCII letters, digits"),
        ("a/b", "may only contain"),
        ("tópico", "may only contain"),
        ("a\n", "may only contain"),
        ("a:b", "may only contain"),
    ],
)
def test_illegal_names(name: str, reason: str) -> None:
    found = invalid_topic_reason(name)
    assert found is not None
    assert reason in found
    with pytest.raises(KafkaError) as caught:
        validate_topic_name(name)
    assert caught.value.error_code is ErrorCode.invalid_topic_exception


@given(st.text(alphabet=LEGAL, min_size=1, max_size=MAX_NAME_LENGTH))
def test_any_name_of_legal_characters_is_legal_except_dots(name: str) -> None:
    assert (invalid_topic_reason(name) is None) == (name not in (".", ".."))


@given(st.text(min_size=1, max_size=20).filter(lambda n: any(c not in LEGAL for c in n)))
def test_any_other_character_is_illegal(name: str) -> None:
    assert invalid_topic_reason(name) is not None


def test_internal_topics() -> None:
    assert is_internal("__consumer_offsets")
    assert is_internal("__transaction_state")
    assert not is_internal("__cluster_metadata")
    assert not is_internal("orders")


def test_collisions_are_between_dot_and_underscore_only() -> None:
    assert has_collision_chars("a.b") and has_collision_chars("a_b")
    assert not has_collision_chars("a-b")
    assert unify_collision_chars("a.b_c") == "a_b_c"
    index = CollisionIndex(["a.b", "plain", "x_y.z"])
    assert index.collision("a_b") == "a.b"
    assert index.collision("a.b") is None  # the same name is not a collision
    assert index.collision("x.y_z") == "x_y.z"
    assert index.collision("a-b") is None
    assert index.collision("plain") is None
    index.add("c_d")
    assert index.collision("c.d") == "c_d"
    assert CollisionIndex.of({"m.n": 1}).collision("m_n") == "m.n"
