"""The registry's errors as Confluent Schema Registry reports them: an HTTP status and an
``error_code`` (the status followed by a two-digit detail, or the bare status)."""

from __future__ import annotations

__all__ = ["RegistryError"]


def _coded(status: int, error_code: int) -> classmethod[RegistryError, [str], RegistryError]:
    """A constructor of the errors with this status and code, whose message is the caller's."""

    def error(cls: type[RegistryError], message: str) -> RegistryError:
        return cls(status, error_code, message)

    return classmethod(error)


class RegistryError(Exception):
    """A request the registry refuses; ``body`` is Confluent's error body."""

    def __init__(self, status: int, error_code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_code = error_code
        self.message = message

    @property
    def body(self) -> dict[str, object]:
        return {"error_code": self.error_code, "message": self.message}

    # the errors whose message is the caller's: ``RegistryError.forwarding(message)``
    incompatible = _coded(409, 409)
    not_permitted = _coded(422, 42205)
    referenced = _coded(422, 42206)
    unprocessable = _coded(422, 422)
    store_error = _coded(500, 50001)
    timeout = _coded(500, 50002)
    forwarding = _coded(500, 50003)

    @classmethod
    def subject_not_found(cls, subject: str) -> RegistryError:
        return cls(404, 40401, f"Subject '{subject}' not found.")

    @classmethod
    def version_not_found(cls, version: object) -> RegistryError:
        return cls(404, 40402, f"Version {version} not found.")

    @classmethod
    def schema_not_found(cls, detail: str = "Schema not found") -> RegistryError:
        return cls(404, 40403, detail)

    @classmethod
    def subject_soft_deleted(cls, subject: str) -> RegistryError:
        return cls(
            404,
            40404,
            f"Subject '{subject}' was soft deleted.Set permanent=true to delete permanently",
        )

    @classmethod
    def subject_not_soft_deleted(cls, subject: str) -> RegistryError:
        return cls(
            404,
            40405,
            f"Subject '{subject}' was not deleted first before being permanently deleted",
        )

    @classmethod
    def version_soft_deleted(cls, subject: str, version: int) -> RegistryError:
        return cls(
            404,
            40406,
            f"Subject '{subject}' Version {version} was soft deleted.Set permanent=true to "
            "delete permanently",
        )

    @classmethod
    def version_not_soft_deleted(cls, subject: str, version: int) -> RegistryError:
        return cls(
            404,
            40407,
            f"Subject '{subject}' Version {version} was not deleted first before being "
            "permanently deleted",
        )

    @classmethod
    def compatibility_not_configured(cls, subject: str) -> RegistryError:
        return cls(
            404,
            40408,
            f"Subject '{subject}' does not have subject-level compatibility configured",
        )

    @classmethod
    def mode_not_configured(cls, subject: str) -> RegistryError:
        return cls(404, 40409, f"Subject '{subject}' does not have subject-level mode configured")

    @classmethod
    def invalid_schema(cls, detail: str) -> RegistryError:
        return cls(422, 42201, f"Invalid schema {detail}")

    @classmethod
    def invalid_version(cls, version: object) -> RegistryError:
        return cls(
            422,
            42202,
            f"The specified version '{version}' is not a valid version id. Allowed values are "
            'between [1, 2^31-1] and the string "latest"',
        )

    @classmethod
    def invalid_compatibility(cls, level: object) -> RegistryError:
        return cls(
            422,
            42203,
            f"Invalid compatibility level. Valid values are none, backward, forward, full, "
            f"backward_transitive, forward_transitive, and full_transitive (got {level})",
        )

    @classmethod
    def invalid_mode(cls, mode: object) -> RegistryError:
        return cls(
            422,
            42204,
            f"Invalid mode. Valid values are READWRITE, READONLY, IMPORT (got {mode})",
        )
