"""The client side of statements (`strom sql shell` and `run`): cut at the `;` that ends each,
never at one in a string, a quoted name or a comment, and sorted by where each goes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as s

from strom.sql.script import Local, Piece, Query, classify, split, statements


def test_statements_end_at_semicolons_outside_strings_names_and_comments() -> None:
    text = (
        "-- orders; all of them\n"
        "CREATE STREAM s (a STRING) WITH (KAFKA_TOPIC='x;y', VALUE_FORMAT='JSON');\n"
        "SET 'auto.offset.reset' = 'earliest'; /* not; here */ SELECT `a;b` FROM s\n"
        "  WHERE a = 'it''s -- no comment' EMIT CHANGES LIMIT 3;\n"
        "SELECT * FROM t"
    )
    pieces, rest = split(text)
    assert pieces == [
        Piece("CREATE STREAM s (a STRING) WITH (KAFKA_TOPIC='x;y', VALUE_FORMAT='JSON');", 2),
        Piece("SET 'auto.offset.reset' = 'earliest';", 3),
        Piece("SELECT `a;b` FROM s\n  WHERE a = 'it''s -- no comment' EMIT CHANGES LIMIT 3;", 3),
    ]
    assert rest == "\nSELECT * FROM t"


def test_what_is_not_ended_yet_waits_for_more() -> None:
    assert split("SELECT 'a;") == ([], "SELECT 'a;")
    assert split("SHOW STREAMS; /* a comment; not ended") == (
        [Piece("SHOW STREAMS;", 1)],
        " /* a comment; not ended",
    )
    assert split(";\n  ;") == ([], "")


@given(s.lists(s.text(alphabet="ab;'`-/*\n ", max_size=12), max_size=4))
def test_fed_in_parts_or_whole_the_statements_are_the_same(parts: list[str]) -> None:
    whole, rest = split("".join(parts))
    pieces: list[str] = []
    buffer = ""
    for part in parts:  # as the shell reads lines: what is left waits for the next one
        found, buffer = split(buffer + part)
        pieces += [p.text for p in found]
    assert pieces == [p.text for p in whole] and buffer == rest


def test_a_script_s_last_statement_without_semicolon_still_goes_to_the_server() -> None:
    assert statements("SHOW STREAMS;\n-- done\n") == [Piece("SHOW STREAMS;", 1)]
    assert statements("SHOW STREAMS;\n\n  SHOW TABLES\n") == [
        Piece("SHOW STREAMS;", 1),
        Piece("SHOW TABLES", 3),
    ]


def test_the_client_runs_set_unset_and_run_script_itself() -> None:
    assert classify("set 'auto.offset.reset'='earliest';") == Local(
        "SET", "auto.offset.reset", "earliest"
    )
    assert classify("SET 'a' = 'it''s';") == Local("SET", "a", "it's")
    assert classify("UNSET 'a';") == Local("UNSET", "a")
    assert classify("RUN SCRIPT '/tmp/a b.sql';") == Local("RUN SCRIPT", "/tmp/a b.sql")
    assert classify("SET auto = 'x';") == "SET auto = 'x';"  # the server says what is wrong


def test_queries_go_to_the_query_endpoint_and_the_rest_to_ksql() -> None:
    assert classify("select * from s emit changes limit 2;") == Query(
        "select * from s emit changes limit 2;", push=True, limit=2
    )
    assert classify("SELECT * FROM t WHERE k = 'x';") == Query(
        "SELECT * FROM t WHERE k = 'x';", push=False, limit=None
    )
    assert classify("SHOW STREAMS;") == "SHOW STREAMS;"
