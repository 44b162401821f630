"""The Schemas page's diff between two versions (``strom.console.registry.schema_diff``): JSON
schemas compared line by line once indented, so that a field added to a schema registered on
one line shows as added lines; other text compared as it is."""

from __future__ import annotations

import json

from strom.console.registry import schema_diff


def _record(*fields: str) -> str:
    return json.dumps({"type": "record", "name": "Order",
                       "fields": [{"name": f, "type": "string"} for f in fields]})  # fmt: skip


def test_a_field_added_to_a_one_line_schema_shows_as_added_lines() -> None:
    lines = schema_diff(_record("id"), _record("id", "note"))
    added = [text for sign, text in lines if sign == "+"]
    assert any('"note"' in text for text in added)
    assert not [text for sign, text in lines if sign == "-" and '"id"' in text]
    assert any(sign == " " and '"id"' in text for sign, text in lines)


def test_a_version_against_itself_has_no_changes() -> None:
    assert {sign for sign, _ in schema_diff(_record("id"), _record("id"))} == {" "}


def test_protobuf_text_is_compared_by_its_lines() -> None:
    old = 'syntax = "proto3";\nmessage M {\n  string id = 1;\n}'
    new = 'syntax = "proto3";\nmessage M {\n  string key = 1;\n}'
    assert ["-", "  string id = 1;"] in schema_diff(old, new)
    assert ["+", "  string key = 1;"] in schema_diff(old, new)
