"""The v3 produce request's parts (``strom.rest.records``): what each type writes, and the
field each bad request names."""

from __future__ import annotations

import base64
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from strom.rest.errors import RestError
from strom.rest.records import DataSpec, delivered, encode_plain, parse, plain_message
from strom.rest.schemas import encode

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=10,
)


@given(st.binary())
def test_binary_is_the_base64_bytes(data: bytes) -> None:
    spec = DataSpec("BINARY", base64.b64encode(data).decode())
    assert encode_plain(spec, "value") == data


@given(JSON_VALUES.filter(lambda value: value is not None))
def test_json_round_trips(value: object) -> None:
    encoded = encode_plain(DataSpec("JSON", value), "value")
    assert encoded is not None and json.loads(encoded) == value


def test_a_record_without_type_is_binary_and_null_data_is_no_bytes() -> None:
    assert encode_plain(DataSpec(None, "eA=="), "key") == b"x"
    assert encode_plain(DataSpec("JSON", None), "key") is None
    assert encode_plain(None, "key") is None


def test_parse_reads_every_field() -> None:
    record = parse({
        "partition_id": 2,
        "headers": [{"name": "h", "value": "dg=="}, {"name": "empty", "value": None}],
        "key": {"type": "string", "data": "k"},
        "value": {"type": "AVRO", "schema_id": 7, "data": {"a": 1}},
        "timestamp": "2026-11-28T12:00:00.5+01:00",
    })  # fmt: skip
    assert record.partition == 2
    assert record.headers == (("h", b"v"), ("empty", None))
    assert record.key == DataSpec("STRING", "k")
    assert record.value is not None and record.value.schema_id == 7
    assert record.value.needs_schema
    assert record.timestamp_ms == 1795863600500


@pytest.mark.parametrize(
    ("raw", "status", "words"),
    [
        ([1], 400, "JSON object"),
        ({"partition_id": "one"}, 400, "partition_id"),
        ({"partition_id": -1}, 404, "Partition not found"),
        ({"key": "raw"}, 400, "key:"),
        ({"value": {"type": "XML"}}, 400, "value.type"),
        ({"value": {"type": "AVRO", "schema_id": "7"}}, 400, "value.schema_id"),
        ({"headers": [{"value": "dg=="}]}, 400, "'name'"),
        ({"headers": [{"name": "h", "value": "%%"}]}, 400, "headers.value"),
        ({"timestamp": "yesterday"}, 400, "timestamp"),
    ],
)
def test_bad_requests_name_the_field(raw: object, status: int, words: str) -> None:
    with pytest.raises(RestError) as refused:
        parse(raw)
    assert refused.value.status == status
    assert words in refused.value.message


def test_a_string_needs_a_json_string() -> None:
    with pytest.raises(RestError, match="STRING needs a JSON string"):
        encode_plain(DataSpec("STRING", 5), "value")


def test_an_answer_carries_the_timestamp_in_iso_8601() -> None:
    answer = delivered(cluster_id="c", topic="t", partition=0, offset=9,
                       timestamp_ms=1795867200123, key=None, value=None)  # fmt: skip
    assert answer["timestamp"] == "2026-11-28T12:00:00.123Z"
    assert answer["error_code"] == 200


PLAIN_PARTS = st.one_of(
    st.none(),
    st.binary().map(lambda b: {"type": "BINARY", "data": base64.b64encode(b).decode()}),
    st.binary().map(lambda b: {"data": base64.b64encode(b).decode()}),
    st.text().map(lambda t: {"type": "STRING", "data": t}),
    JSON_VALUES.map(lambda v: {"type": "JSON", "data": v}),
)


@given(PLAIN_PARTS, PLAIN_PARTS, st.none() | st.integers(0, 2))
def test_a_plain_record_takes_the_batch_path_with_the_general_paths_bytes_and_answer(
    key: object, value: object, partition: int | None
) -> None:
    raw = {name: part for name, part in (("key", key), ("value", value)) if part is not None}
    if partition is not None:
        raw["partition_id"] = partition
    plain = plain_message(raw, 3, registry=False)
    assert plain is not None
    message, tail = plain
    record = parse(raw)
    key_part, value_part = (encode(None, spec, "t", is_key=k) for spec, k in
                            ((record.key, True), (record.value, False)))  # fmt: skip
    assert (message.get("key"), message.get("value")) == (key_part.data, value_part.data)
    assert message.get("partition") == partition
    answer = json.loads("{" + tail)
    assert (answer["key"], answer["value"]) == (key_part.report, value_part.report)


@pytest.mark.parametrize(
    "raw",
    [
        {"value": {"data": "eA=="}, "headers": []},
        {"value": {"data": "eA=="}, "timestamp": "2026-11-28T12:00:00Z"},
        {"value": {"type": "AVRO", "data": {}}},
        {"value": {"type": "binary", "data": "eA=="}},
        {"value": {"data": "not base64!"}},
        {"value": {"type": "STRING", "data": 5}},
        {"value": {"data": "eA==", "subject": "s"}},
        {"partition_id": 3, "value": {"data": "eA=="}},
        {"partition_id": True},
        ["not", "an", "object"],
    ],
)
def test_anything_else_takes_the_general_path(raw: object) -> None:
    assert plain_message(raw, 3, registry=False) is None


def test_an_untyped_part_goes_to_the_registry_when_there_is_one() -> None:
    assert plain_message({"value": {"data": "eA=="}}, 1, registry=True) is None
