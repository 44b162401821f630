"""``strom produce``: lines to messages, and one error line per failed message."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, Message

from strom.cli.produce import Deliveries, Line, split_line, strip_eol


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"a\n", b"a"),
        (b"a\r\n", b"a"),
        (b"a", b"a"),
        (b"\n", b""),
        (b"a\r", b"a\r"),  # only a line end is taken off
        (b"a\n\n", b"a\n"),
    ],
)
def test_strip_eol(raw: bytes, expected: bytes) -> None:
    assert strip_eol(raw) == expected


def test_without_separator_the_line_is_the_value() -> None:
    assert split_line(b"k:v", 1, None) == Line(1, None, b"k:v")


def test_key_is_split_at_the_first_separator() -> None:
    assert split_line(b"k:v:w", 4, b":") == Line(4, b"k", b"v:w")
    assert split_line(b":v", 5, b":") == Line(5, b"", b"v")
    assert split_line(b"k::v", 6, b"::") == Line(6, b"k", b"v")


def test_line_without_separator_is_refused() -> None:
    with pytest.raises(ValueError, match="no key separator ':' found"):
        split_line(b"novalue", 1, b":")


def test_failed_delivery_is_one_line_naming_the_input_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    deliveries = Deliveries()
    callback = deliveries.callback(7)
    callback(None, Message(topic="t", value=b"ok"))
    callback(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE, "Broker: Message size too large"), Message())
    assert deliveries.failed == 1
    assert capsys.readouterr().err == (
        "Error: line 7: MSG_SIZE_TOO_LARGE: Broker: Message size too large\n"
    )
