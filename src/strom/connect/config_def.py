"""Connector settings as Kafka Connect's ``ConfigDef`` defines them, and their validation,
without I/O: every problem of a config is named, per setting, in the shape of Connect's
``PUT /connector-plugins/{plugin}/config/validate`` answer (``ConfigInfos``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["NO_DEFAULT", "Definition", "at_least", "error_messages", "one_of", "validate"]

NO_DEFAULT = object()
"""The default of a required setting."""

Check = Callable[[Any], str | None]
"""A validator: the reason a parsed value is refused (Connect's text after "Invalid value
X for configuration NAME: "), or None."""


def at_least(low: int) -> Check:
    return lambda value: None if value >= low else f"Value must be at least {low}"


def one_of(*allowed: str) -> Check:
    shown = ", ".join(allowed)
    return lambda value: None if value in allowed else f"String must be one of: {shown}"


@dataclass(frozen=True)
class Definition:
    """One setting: ``type`` is ConfigDef's (STRING, INT, LONG, BOOLEAN, LIST, CLASS, PASSWORD)."""

    name: str
    type: str
    default: object
    importance: str
    documentation: str
    group: str
    order: int
    display_name: str
    check: Check | None = None
    width: str = "NONE"
    dependents: tuple[str, ...] = field(default=())

    @property
    def required(self) -> bool:
        return self.default is NO_DEFAULT

    def parse(self, text: str) -> Any:
        """The value of ``text``; a ``ValueError`` with ConfigDef's reason when it is none."""
        stripped = text.strip()
        if self.type in {"INT", "LONG"}:
            try:
                return int(stripped)
            except ValueError:
                raise ValueError(f"Not a number of type {self.type}") from None
        if self.type == "BOOLEAN":
            if stripped.lower() not in ("true", "false"):
                raise ValueError("Expected value to be either true or false")
            return stripped.lower() == "true"
        if self.type == "LIST":
            return [part.strip() for part in stripped.split(",") if part.strip()]
        if self.type in ("STRING", "CLASS"):
            return stripped
        return text

    def key_info(self) -> dict[str, Any]:
        """Connect's ``ConfigKeyInfo``."""
        default = None if self.default is NO_DEFAULT else self.default
        return {
            "name": self.name,
            "type": self.type,
            "required": self.required,
            "default_value": None if default is None else str(default),
            "importance": self.importance,
            "documentation": self.documentation,
            "group": self.group,
            "width": self.width,
            "display_name": self.display_name,
            "dependents": list(self.dependents),
            "order": self.order,
        }


def _errors(definition: Definition, config: Mapping[str, str]) -> list[str]:
    text = config.get(definition.name)
    if text is None:
        if definition.required:
            return [
                f'Missing required configuration "{definition.name}" which has no default value.'
            ]
        return []
    try:
        value = definition.parse(text)
    except ValueError as error:
        return [f"Invalid value {text} for configuration {definition.name}: {error}"]
    if definition.check is not None and (refused := definition.check(value)) is not None:
        return [f"Invalid value {text} for configuration {definition.name}: {refused}"]
    return []


def validate(
    plugin: str,
    definitions: Iterable[Definition],
    config: Mapping[str, str],
    extra: Mapping[str, list[str]] | None = None,
) -> dict[str, Any]:
    """Connect's ``ConfigInfos`` for ``config``: every definition with its value and errors,
    plus ``extra`` errors found beyond single settings (keyed by setting name)."""
    extra = extra or {}
    configs = []
    groups: list[str] = []
    count = 0
    for definition in definitions:
        if definition.group not in groups:
            groups.append(definition.group)
        errors = _errors(definition, config) + list(extra.get(definition.name, ()))
        count += len(errors)
        value = config.get(definition.name)
        configs.append(
            {
                "definition": definition.key_info(),
                "value": {
                    "name": definition.name,
                    "value": "[hidden]" if definition.type == "PASSWORD" and value else value,
                    "recommended_values": [],
                    "errors": errors,
                    "visible": True,
                },
            }
        )
    return {"name": plugin, "error_count": count, "groups": groups, "configs": configs}


def error_messages(infos: Mapping[str, Any]) -> list[str]:
    """The errors of a ``validate`` answer, in order."""
    return [error for entry in infos["configs"] for error in entry["value"]["errors"]]
