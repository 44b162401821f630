"""A pull query's WHERE over rows of a table's state: SQL's comparisons and NULL logic, and what
is not supported said in one line."""

from __future__ import annotations

import pytest

from strom.sql.errors import SqlSemanticError
from strom.sql.parser import parse_expression
from strom.sql.row_filter import row_filter

ROWS: list[dict[str, object]] = [
    {"ITEM": "apple", "N": 2, "TOTAL": 15.5},
    {"ITEM": "pear", "N": 1, "TOTAL": 7.5},
    {"ITEM": "fig", "N": None, "TOTAL": None},
]


def _kept(where: str) -> list[str]:
    keep = row_filter(parse_expression(where))
    return [str(row["ITEM"]) for row in ROWS if keep(row)]


@pytest.mark.parametrize(
    ("where", "kept"),
    [
        ("TOTAL > 10", ["apple"]),
        ("ITEM >= 'b' AND ITEM < 'q'", ["pear", "fig"]),
        ("ITEM BETWEEN 'a' AND 'f'", ["apple"]),
        ("ITEM NOT BETWEEN 'a' AND 'f'", ["pear", "fig"]),
        ("N IN (1, 3)", ["pear"]),
        ("N NOT IN (1, 3)", ["apple"]),  # NULL NOT IN (...) is unknown: not kept
        ("N <> 2", ["pear"]),
        ("NOT (N = 2)", ["pear"]),
        ("N IS NULL OR TOTAL < 10", ["pear", "fig"]),
        ("N IS NOT NULL AND TOTAL >= -1", ["apple", "pear"]),
        ("N > 1 OR TOTAL > 100", ["apple"]),
        ("TOTAL = 7.5", ["pear"]),
    ],
)
def test_a_row_is_kept_when_the_where_is_true(where: str, kept: list[str]) -> None:
    assert _kept(where) == kept


def test_what_is_not_supported_says_so() -> None:
    with pytest.raises(SqlSemanticError, match=r"^Unsupported pull query WHERE: UCASE\(ITEM\)"):
        row_filter(parse_expression("UCASE(ITEM) = 'PEAR'"))
    with pytest.raises(SqlSemanticError, match=r"ITEM LIKE 'p%'"):
        row_filter(parse_expression("ITEM LIKE 'p%'"))
