"""A connector's ``transforms`` and ``predicates`` settings parsed as Kafka names them, and every
problem named in Connect's validate answer."""

from __future__ import annotations

import re

import pytest

from strom.connect.config_def import error_messages
from strom.connect.connectors.files import FileStreamSource
from strom.connect.connectors.jdbc import JdbcSink
from strom.connect.transforms.specs import Predicate, Transform, chain, problems

BASE = {
    "name": "in",
    "connector.class": "FileStreamSource",
    "file": "/tmp/in.txt",
    "topic": "lines",
}


def test_chain_by_class_names_aliases_and_variants() -> None:
    parsed = chain(
        {
            "transforms": "ins, route ,key",
            "transforms.ins.type": "org.apache.kafka.connect.transforms.InsertField$Value",
            "transforms.ins.static.field": "origin",
            "transforms.route.type": "RegexRouter",
            "transforms.route.regex": "a(.*)",
            "transforms.route.replacement": "b$1",
            "transforms.route.predicate": "isA",
            "transforms.route.negate": "true",
            "transforms.key.type": "ValueToKey",
            "transforms.key.fields": "id, name",
            "predicates": "isA",
            "predicates.isA.type": "org.apache.kafka.connect.transforms.predicates"
            ".TopicNameMatches",
            "predicates.isA.pattern": "a.*",
        }
    )
    ins, route, key = parsed.transforms
    assert (ins.kind, ins.part, ins.get("static.field")) == ("InsertField", "value", "origin")
    assert (route.kind, route.part, route.negate) == ("RegexRouter", None, True)
    assert route.predicate == Predicate(
        "isA",
        "TopicNameMatches",
        {
            "type": "org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
            "pattern": "a.*",
        },
    )
    assert (key.kind, key.part, key.names("fields")) == ("ValueToKey", "value", ["id", "name"])
    assert chain({}).transforms == ()


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"transforms": "x"}, 'Missing required configuration "transforms.x.type"'),
        (
            {"transforms": "x", "transforms.x.type": "com.acme.Mystery"},
            "Invalid value com.acme.Mystery for configuration transforms.x.type: Class "
            "com.acme.Mystery could not be found.",
        ),
        (
            {"transforms": "x", "transforms.x.type": "InsertField"},
            "Class InsertField could not be found.",  # InsertField has only $Key and $Value
        ),
        (
            {"transforms": "x", "transforms.x.type": "ExtractField$Key"},
            'Missing required configuration "transforms.x.field" which has no default value.',
        ),
        (
            {"transforms": "x", "transforms.x.type": "Cast$Value", "transforms.x.spec": "a:int"},
            "Invalid value a:int for configuration transforms.x.spec: Invalid type found in "
            "casting spec: int",
        ),
        (
            {
                "transforms": "x",
                "transforms.x.type": "TimestampConverter$Value",
                "transforms.x.target.type": "string",
            },
            "TimestampConverter requires format option to be specified",
        ),
        (
            {"transforms": "x", "transforms.x.type": "Filter", "transforms.x.predicate": "p"},
            "Invalid value p for configuration transforms.x.predicate: No predicate named p",
        ),
        (
            {
                "transforms": "x",
                "transforms.x.type": "RegexRouter",
                "transforms.x.regex": "(",
                "transforms.x.replacement": "y",
            },
            "Invalid value ( for configuration transforms.x.regex: Invalid regex",
        ),
        (
            {
                "transforms": "x",
                "transforms.x.type": "ReplaceField$Value",
                "transforms.x.renames": "a:b,c",
            },
            "Invalid value a:b,c for configuration transforms.x.renames: Invalid rename",
        ),
        (
            {"predicates": "p", "predicates.p.type": "IsFriday"},
            "Invalid value IsFriday for configuration predicates.p.type: Class IsFriday could "
            "not be found.",
        ),
        (
            {"predicates": "p", "predicates.p.type": "HasHeaderKey"},
            'Missing required configuration "predicates.p.name" which has no default value.',
        ),
    ],
)
def test_problems_are_named_in_the_validate_answer(settings: dict[str, str], message: str) -> None:
    found = [e for errors in problems(settings).values() for e in errors]
    assert any(message in e for e in found), found
    answer = FileStreamSource.validate(BASE | settings)
    assert any(message in e for e in error_messages(answer))
    with pytest.raises(ValueError, match=re.escape(found[0])):
        chain(settings)


def test_a_good_chain_validates_clean() -> None:
    config = BASE | {
        "transforms": "h,f",
        "transforms.h.type": "HoistField$Value",
        "transforms.h.field": "line",
        "transforms.f.type": "Filter",
        "transforms.f.predicate": "empty",
        "predicates": "empty",
        "predicates.empty.type": "RecordIsTombstone",
    }
    assert problems(config) == {}
    assert FileStreamSource.validate(config)["error_count"] == 0
    assert isinstance(chain(config).transforms[0], Transform)


def test_the_jdbc_sink_refuses_transforms_for_now() -> None:
    config = {
        "name": "db",
        "connector.class": "JdbcSinkConnector",
        "topics": "t",
        "connection.url": "jdbc:postgresql://localhost/db",
        "transforms": "h",
        "transforms.h.type": "HoistField$Value",
        "transforms.h.field": "f",
    }
    assert error_messages(JdbcSink.validate(config)) == [
        "The JDBC sink runs no transforms yet: transform in the source, or before it"
    ]
