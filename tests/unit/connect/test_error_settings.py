"""Kafka Connect's error handling settings: taken by the connectors that run them, refused with
the reason by the others."""

from __future__ import annotations

from strom.connect.config_def import error_messages
from strom.connect.connectors.files import FileStreamSink
from strom.connect.connectors.jdbc import JdbcSink
from strom.connect.dead_letters import ErrorHandler

TOLERANT = {
    "errors.tolerance": "all",
    "errors.deadletterqueue.topic.name": "dlq",
    "errors.deadletterqueue.context.headers.enable": "true",
    "errors.log.enable": "true",
}


def test_the_file_sink_takes_errors_tolerance_all_and_a_dead_letter_queue() -> None:
    config = {"name": "out", "connector.class": "FileStreamSink", "topics": "t"} | TOLERANT
    assert FileStreamSink.validate(config)["error_count"] == 0
    assert ErrorHandler.of("out", config) == ErrorHandler(
        "out",
        tolerate=True,
        topic="dlq",
        context_headers=True,
        log_errors=True,
        log_messages=False,
    )
    assert not ErrorHandler.of("out", {}).tolerate


def test_connectors_without_error_handling_refuse_it() -> None:
    config = {
        "name": "db",
        "connector.class": "JdbcSinkConnector",
        "topics": "t",
        "connection.url": "jdbc:postgresql://localhost/db",
    } | TOLERANT
    assert error_messages(JdbcSink.validate(config)) == [
        "errors.tolerance=all is not supported by this connector in strom yet",
        "Dead letter queues are not supported by this connector in strom yet",
    ]
