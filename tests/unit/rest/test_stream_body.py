"""A produce stream's body cut into its JSON objects (``v3_records._whole_objects``): objects
back to back or between JSON whitespace, the last one left while it is not whole, one over the
limit as its 413."""

from __future__ import annotations

import json

from strom.rest.context import TOO_LARGE
from strom.rest.v3_records import _whole_objects


def test_objects_back_to_back_or_between_whitespace() -> None:
    body = '{"a":1}{"b":[{}]}\n{"c":"}{"} \r\n\t{"d":null}  '
    assert _whole_objects(body, 100) == (
        [{"a": 1}, {"b": [{}]}, {"c": "}{"}, {"d": None}],
        len(body),
    )


def test_an_object_not_whole_yet_is_left_for_the_next_chunk() -> None:
    body = '{"a":1} {"b":"x'
    found, rest = _whole_objects(body, 100)
    assert found == [{"a": 1}]
    assert body[rest:] == '{"b":"x'


def test_a_value_that_is_no_object_is_decoded_for_the_record_check_to_refuse() -> None:
    assert _whole_objects('{"a":1}[2]"s"', 100)[0] == [{"a": 1}, [2], "s"]


def test_an_object_over_the_limit_is_its_error() -> None:
    small, big = json.dumps({"v": "x"}), json.dumps({"v": "x" * 50})
    assert _whole_objects(small + big + small, 20)[0] == [{"v": "x"}, TOO_LARGE, {"v": "x"}]


def test_text_that_is_no_json_stops_the_objects_there() -> None:
    body = '{"a":1} nonsense {"b":2}'
    found, rest = _whole_objects(body, 100)
    assert found == [{"a": 1}]
    assert body[rest:] == 'nonsense {"b":2}'
