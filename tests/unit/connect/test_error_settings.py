"""Kafka Connect's error handling settings: taken by the connectors that run them, refused with
the reason by the others."""

from __future__ import annotations

from strom.connect.config_def import error_messages
from strom.connect.connectors.cdc import PostgresConnector
from strom.connect.connectors.files import FileStreamSink, FileStreamSource
from strom.connect.connectors.jdbc import JdbcSink, JdbcSource
from strom.connect.dead_letters import ErrorHandler

TOLERANT = {
    "errors.tolerance": "all",
    "errors.deadletterqueue.topic.name": "dlq",
    "errors.deadletterqueue.context.headers.enable": "true",
    "errors.log.enable": "true",
}


def test_the_sinks_take_errors_tolerance_all_and_a_dead_letter_queue() -> None:
    config = {"name": "out", "connector.class": "FileStreamSink", "topics": "t"} | TOLERANT
    assert FileStreamSink.validate(config)["error_count"] == 0
    database = {"connection.url": "jdbc:postgresql://localhost/db"}
    assert (
        JdbcSink.validate(config | database | {"connector.class": "JdbcSink"})["error_count"] == 0
    )
    assert ErrorHandler.of("out", config) == ErrorHandler(
        "out",
        tolerate=True,
        topic="dlq",
        context_headers=True,
        log_errors=True,
        log_messages=False,
    )
    assert not ErrorHandler.of("out", {}).tolerate


def test_the_database_sources_take_errors_tolerance_all() -> None:
    config = {
        "name": "db",
        "connector.class": "JdbcSourceConnector",
        "connection.url": "jdbc:postgresql://localhost/db",
        "topic.prefix": "db-",
        "mode": "bulk",
    } | TOLERANT  # a source has no dead letter queue: Kafka's sources ignore its setting
    assert error_messages(JdbcSource.validate(config)) == []
    cdc = {
        "name": "cdc",
        "connector.class": "PostgresConnector",
        "database.hostname": "localhost",
        "database.user": "postgres",
        "database.dbname": "db",
        "topic.prefix": "db",
    } | TOLERANT
    assert error_messages(PostgresConnector.validate(cdc)) == []


def test_connectors_without_error_handling_refuse_it() -> None:
    config = {"name": "f", "connector.class": "FileStreamSource", "topic": "t"} | TOLERANT
    assert error_messages(FileStreamSource.validate(config | {"file": "/tmp/x"})) == [
        "errors.tolerance=all is not supported by this connector in strom yet",
    ]
