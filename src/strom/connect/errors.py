"""Kafka Connect's REST errors: an HTTP status and a message, answered as
``{"error_code": <status>, "message": ...}`` (Connect's ``ConnectRestException``)."""

from __future__ import annotations

__all__ = ["ConnectError"]


class ConnectError(Exception):
    """A request the worker refuses."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message

    @property
    def body(self) -> dict[str, object]:
        return {"error_code": self.status, "message": self.message}

    @classmethod
    def connector_not_found(cls, name: str) -> ConnectError:
        return cls(404, f"Connector {name} not found")

    @classmethod
    def task_not_found(cls, name: str, task: int) -> ConnectError:
        return cls(404, f"Task {name}-{task} not found")

    @classmethod
    def already_exists(cls, name: str) -> ConnectError:
        return cls(409, f"Connector {name} already exists")

    @classmethod
    def bad_request(cls, message: str) -> ConnectError:
        return cls(400, message)
