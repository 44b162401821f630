"""What `strom sql shell` prints for the server's entities and a query's rows, as ksqlDB's CLI
draws them."""

from __future__ import annotations

from strom.sql import entities
from strom.sql import types as ty
from strom.sql.analyzer import OutputColumn
from strom.sql.display import entity, query_header, query_row, table


def test_a_table_pads_every_column_to_its_widest_cell() -> None:
    assert table(["Name", "N"], [["ab", 1], ["c", None]]) == [
        " Name | N    ",
        "-------------",
        " ab   | 1    ",
        " c    | null ",
        "-------------",
    ]


def test_a_status_is_its_message() -> None:
    status = entities.current_status("CREATE ...", "stream/`S`/create", "Stream created", 1)
    assert entity(status) == [" Message        ", "----------------", " Stream created ", "-" * 16]


def test_show_streams_names_topic_and_formats() -> None:
    body = {
        "@type": "streams",
        "streams": [
            {
                "name": "ORDERS",
                "topic": "orders",
                "keyFormat": "KAFKA",
                "valueFormat": "JSON",
                "isWindowed": False,
            }
        ],
    }
    header, _, row, _ = entity(body)
    assert header.split("|") == [
        " Stream Name ",
        " Kafka Topic ",
        " Key Format ",
        " Value Format ",
        " Windowed ",
    ]
    assert [c.strip() for c in row.split("|")] == ["ORDERS", "orders", "KAFKA", "JSON", "false"]


def test_describe_lists_the_fields_with_the_key_marked() -> None:
    described = {
        "@type": "sourceDescription",
        "sourceDescription": {
            "name": "S",
            "type": "STREAM",
            "topic": "s",
            "partitions": 1,
            "replication": 1,
            "keyFormat": "KAFKA",
            "valueFormat": "JSON",
            "readQueries": [],
            "writeQueries": [{"id": "CSAS_S_1"}],
            "fields": [
                {"name": "ID", "type": "KEY", "schema": entities.schema(ty.STRING)},
                {"name": "TAGS", "schema": entities.schema(ty.ArrayType(ty.STRING))},
            ],
        },
    }
    lines = entity(described)
    assert lines[0] == "Name                 : S"
    assert lines[6:11] == [
        " Field | Type          ",
        "-----------------------",
        " ID    | STRING  (key) ",
        " TAGS  | ARRAY<STRING> ",
        "-----------------------",
    ]
    assert lines[-2:] == ["Queries that write from this STREAM:", " CSAS_S_1"]


def test_an_entity_of_another_type_is_its_json() -> None:
    assert entity({"@type": "new_thing", "x": 1}) == [
        "{",
        '  "@type": "new_thing",',
        '  "x": 1',
        "}",
    ]


def test_query_rows_line_up_under_their_header() -> None:
    columns = (OutputColumn("ID", ty.STRING, True), OutputColumn("AMOUNT", ty.DOUBLE, False))
    names = entities.stream_header("q", columns)["columnNames"]
    rule, names_line, _ = query_header(names)
    row = query_row(names, ["o1", 3.5])
    assert len(rule) == len(names_line) == len(row) == 1 + 2 * 21
    assert names_line.split("|")[1].rstrip() == "ID" and row.split("|")[1:3] == [
        "o1".ljust(20),
        "3.5".ljust(20),
    ]
