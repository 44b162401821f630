"""The JDBC connectors' cores: JDBC URLs as psycopg's settings, Confluent's offsets of a
timestamp, and the SQL of each mode."""

from __future__ import annotations

import pytest

pytest.importorskip("psycopg")

from strom.connect.connectors.jdbc.database import connection_settings
from strom.connect.connectors.jdbc.modes import Mode, micros_of, offset_of


def test_a_jdbc_url_becomes_psycopgs_settings() -> None:
    settings = connection_settings(
        "jdbc:postgresql://db.example:6543/shop?user=u&password=p", None, None
    )
    assert (settings["host"], settings["port"], settings["dbname"]) == ("db.example", 6543, "shop")
    assert (settings["user"], settings["password"]) == ("u", "p")
    assert connection_settings("jdbc:postgresql://h/d", "me", "pw")["user"] == "me"
    assert connection_settings("jdbc:postgresql://h/d", None, None)["port"] == 5432
    for bad in ("jdbc:mysql://h/d", "jdbc:postgresql://h/", "postgresql://h/d"):
        with pytest.raises(ValueError, match=r"jdbc:postgresql|no host or no database"):
            connection_settings(bad, None, None)


def test_confluents_timestamp_offsets_round_trip_to_microseconds() -> None:
    micros = 1714521601_000001  # 2024-05-01T00:00:01.000001Z
    offset = offset_of(micros, 7)
    assert offset == {"incrementing": 7, "timestamp": 1714521601000, "timestamp_nanos": 1000}
    assert micros_of(offset) == micros
    assert micros_of(offset_of(-1, None)) == -1  # before the epoch: nanos stay within the second
    assert micros_of({"timestamp": 5}) == 5000
    assert micros_of({}) is None


def test_each_mode_reads_after_its_start_up_to_its_end() -> None:
    incrementing = Mode("incrementing", '"t"', "id")
    assert incrementing.initial() == {"incrementing": -1}
    latest = incrementing.latest({"incrementing": 3})
    assert (
        latest is not None
        and 'max("id")' in latest.as_string()
        and '"id" > 3' in latest.as_string()
    )
    rows = incrementing.rows(
        incrementing.latest({"incrementing": 0}) or latest, {"incrementing": 1}, {"incrementing": 5}
    )
    assert 'WHERE "id" > 1 AND NOT "id" > 5 ORDER BY "id"' in rows.as_string()
    both = Mode("timestamp+incrementing", "(SELECT 1)", "id", "at")
    assert both.initial() == {}
    text = both.latest({}).as_string()  # type: ignore[union-attr]
    assert "WHERE TRUE AND" in text and 'ORDER BY "at" DESC, "id" DESC LIMIT 1' in text
    assert both.end({}, (2_000_000, 4)) == {
        "incrementing": 4,
        "timestamp": 2000,
        "timestamp_nanos": 0,
    }
    assert both.end({"incrementing": 4}, (None, None)) == {"incrementing": 4}
    bulk = Mode("bulk", '"t"')
    assert bulk.latest({"polls": 0}) is None and bulk.end({"polls": 2}, None) == {"polls": 3}
