"""Kafka's error codes (kio generates them from Kafka's own list) and an exception carrying one."""

from __future__ import annotations

from kio.schema.errors import ErrorCode

__all__ = ["ErrorCode", "KafkaError"]


class KafkaError(Exception):
    """A failure that maps to one of Kafka's error codes; the message says what was wrong."""

    def __init__(self, error_code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error_code = error_code

    @property
    def message(self) -> str:
        return str(self.args[0])
