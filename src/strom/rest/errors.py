"""Errors as Confluent REST Proxy answers them: an HTTP status and ``{"error_code",
"message"}``, where a Kafka error's code is the proxy's (rest-utils' ``KafkaExceptionMapper``):
40101 authentication, 40301 authorization, 40403 unknown topic or partition, 40002 a request
Kafka refused as invalid, 50003 a retriable error, 50002 any other."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from confluent_kafka import KafkaError, KafkaException

__all__ = ["RestError", "from_kafka", "not_found"]


@dataclass
class RestError(Exception):
    status: int
    error_code: int
    message: str

    def __str__(self) -> str:
        return self.message


_INVALID: Final = frozenset(
    {
        KafkaError.TOPIC_ALREADY_EXISTS,
        KafkaError.INVALID_REPLICATION_FACTOR,
        KafkaError.INVALID_PARTITIONS,
        KafkaError.TOPIC_EXCEPTION,
        KafkaError.INVALID_CONFIG,
        KafkaError.INVALID_REQUEST,
        KafkaError.POLICY_VIOLATION,
        KafkaError.INVALID_REPLICA_ASSIGNMENT,
        KafkaError.UNSUPPORTED_VERSION,
        KafkaError.MSG_SIZE_TOO_LARGE,
        KafkaError.INVALID_RECORD,
        KafkaError._INVALID_ARG,
    }
)
_AUTHORIZATION: Final = frozenset(
    {
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.GROUP_AUTHORIZATION_FAILED,
        KafkaError.CLUSTER_AUTHORIZATION_FAILED,
        KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        KafkaError.DELEGATION_TOKEN_AUTHORIZATION_FAILED,
    }
)
_UNKNOWN: Final = frozenset({KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC,
                             KafkaError._UNKNOWN_PARTITION})  # fmt: skip


def not_found(message: str) -> RestError:
    return RestError(404, 404, message)


def from_kafka(error: KafkaError | KafkaException) -> RestError:
    """The proxy's answer to a Kafka client error."""
    if isinstance(error, KafkaException):
        first = error.args[0] if error.args else None
        if not isinstance(first, KafkaError):
            return RestError(500, 50002, f"Kafka error: {error}")
        error = first
    code, text = error.code(), error.str()
    if code in _UNKNOWN:
        return RestError(404, 40403, "This server does not host this topic-partition.")
    if code in _AUTHORIZATION:
        return RestError(403, 40301, "Request is not authorized")
    if code in (KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED):
        return RestError(401, 40101, "Authentication failed")
    if code in _INVALID:
        return RestError(400, 40002, text)
    if error.retriable():
        return RestError(500, 50003, f"Kafka error: {text}")
    return RestError(500, 50002, f"Kafka error: {text}")
