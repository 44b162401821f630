"""A connector's ``transforms`` and ``predicates`` settings as Kafka names them, parsed into
specs and checked without I/O: ``chain`` gives the transforms in order with their predicates,
``problems`` every reason a config's transforms cannot run (for Connect's validate answer)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "CAST_TYPES",
    "PREDICATES",
    "TRANSFORMS",
    "Chain",
    "Predicate",
    "Transform",
    "chain",
    "problems",
]

PACKAGE = "org.apache.kafka.connect.transforms."
PREDICATE_PACKAGE = PACKAGE + "predicates."

TRANSFORMS: dict[str, tuple[str, ...]] = {
    "InsertField": ("Key", "Value"),
    "ReplaceField": ("Key", "Value"),
    "MaskField": ("Key", "Value"),
    "Cast": ("Key", "Value"),
    "TimestampConverter": ("Key", "Value"),
    "ExtractField": ("Key", "Value"),
    "ValueToKey": (),
    "HoistField": ("Key", "Value"),
    "Flatten": ("Key", "Value"),
    "RegexRouter": (),
    "TimestampRouter": (),
    "Filter": (),
    "HeaderFrom": ("Key", "Value"),
    "InsertHeader": (),
    "DropHeaders": (),
    "SetSchemaMetadata": ("Key", "Value"),
}
"""Each transform's simple name and its ``$Key``/``$Value`` variants (none: one class)."""

PREDICATES = ("TopicNameMatches", "HasHeaderKey", "RecordIsTombstone")

CAST_TYPES = ("int8", "int16", "int32", "int64", "float32", "float64", "boolean", "string")
TIMESTAMP_TYPES = ("string", "unix", "Date", "Timestamp")
UNIX_PRECISIONS = ("seconds", "milliseconds", "microseconds", "nanoseconds")

_REQUIRED: dict[str, tuple[str, ...]] = {
    "ExtractField": ("field",),
    "HoistField": ("field",),
    "ValueToKey": ("fields",),
    "MaskField": ("fields",),
    "Cast": ("spec",),
    "TimestampConverter": ("target.type",),
    "RegexRouter": ("regex", "replacement"),
    "HeaderFrom": ("fields", "headers", "operation"),
    "InsertHeader": ("header", "value.literal"),
    "DropHeaders": ("headers",),
    "TopicNameMatches": ("pattern",),
    "HasHeaderKey": ("name",),
}
"""Settings without a default, by transform or predicate."""


@dataclass(frozen=True)
class Predicate:
    """One predicate: its alias, simple class name and settings."""

    alias: str
    kind: str
    settings: Mapping[str, str]


@dataclass(frozen=True)
class Transform:
    """One transform: ``part`` is ``key`` or ``value`` for the ``$Key``/``$Value`` variants
    (``value`` for ValueToKey), ``None`` for a transform of the whole record."""

    alias: str
    kind: str
    part: str | None
    settings: Mapping[str, str]
    predicate: Predicate | None = None
    negate: bool = False

    def get(self, name: str, default: str = "") -> str:
        return self.settings.get(name, default).strip()

    def names(self, name: str) -> list[str]:
        """A LIST setting's items."""
        return [item.strip() for item in self.settings.get(name, "").split(",") if item.strip()]


@dataclass(frozen=True)
class Chain:
    """A connector's transforms in the order of its ``transforms`` setting."""

    transforms: tuple[Transform, ...] = field(default=())


def _aliases(config: Mapping[str, str], name: str) -> list[str]:
    return [a.strip() for a in config.get(name, "").split(",") if a.strip()]


def _settings(config: Mapping[str, str], prefix: str) -> dict[str, str]:
    return {k.removeprefix(prefix): v for k, v in config.items() if k.startswith(prefix)}


def _transform_class(name: str) -> tuple[str, str | None] | None:
    """The simple name and part of a transform class (full name or simple alias), or None."""
    simple = name.strip().removeprefix(PACKAGE)
    kind, _, variant = simple.partition("$")
    if kind not in TRANSFORMS:
        return None
    variants = TRANSFORMS[kind]
    if variants and variant not in variants:
        return None
    if not variants and variant:
        return None
    if kind == "ValueToKey":
        return kind, "value"
    return kind, variant.lower() or None


def _predicate_class(name: str) -> str | None:
    simple = name.strip().removeprefix(PREDICATE_PACKAGE)
    return simple if simple in PREDICATES else None


def _setting_problems(kind: str, prefix: str, settings: Mapping[str, str]) -> list[str]:
    found = [
        f'Missing required configuration "{prefix}{name}" which has no default value.'
        for name in _REQUIRED.get(kind, ())
        if not settings.get(name, "").strip()
    ]

    def bad(name: str, reason: str) -> None:
        found.append(f"Invalid value {settings[name]} for configuration {prefix}{name}: {reason}")

    for name in ("regex", "pattern"):
        if settings.get(name, "").strip():
            try:
                re.compile(settings[name])
            except re.error as error:
                bad(name, f"Invalid regex: {error}")
    if kind == "Cast" and settings.get("spec", "").strip():
        for item in settings["spec"].split(","):
            target = item.rpartition(":")[2].strip()
            if target not in CAST_TYPES:
                bad("spec", f"Invalid type found in casting spec: {target}")
    if kind == "TimestampConverter":
        target = settings.get("target.type", "").strip()
        if target and target not in TIMESTAMP_TYPES:
            reason = "Time is not supported by strom (Spark has no time of day type)"
            if target != "Time":
                reason = f"String must be one of: {', '.join(TIMESTAMP_TYPES)}"
            bad("target.type", reason)
        if target == "string" and not settings.get("format", "").strip():
            bad("target.type", "TimestampConverter requires format option to be specified")
        precision = settings.get("unix.precision", "milliseconds").strip()
        if precision not in UNIX_PRECISIONS:
            bad("unix.precision", f"String must be one of: {', '.join(UNIX_PRECISIONS)}")
    renames = [r for r in settings.get("renames", "").split(",") if r.strip()]
    if kind == "ReplaceField" and any(r.count(":") != 1 for r in renames):
        bad("renames", "Invalid rename mapping: expected a list of old:new")
    if kind == "HeaderFrom" and settings.get("operation", "").strip() not in ("", "move", "copy"):
        bad("operation", "String must be one of: move, copy")
    if kind == "HeaderFrom":
        count = [len(settings.get(n, "").split(",")) for n in ("fields", "headers")]
        if count[0] != count[1]:
            bad("headers", "'fields' config must have the same number of elements as 'headers'")
    version = settings.get("schema.version", "").strip()
    if kind == "SetSchemaMetadata" and version and not version.isdigit():
        bad("schema.version", "Not a number of type INT")
    return found


def problems(config: Mapping[str, str]) -> dict[str, list[str]]:
    """Every problem of ``config``'s transforms and predicates, under ``transforms`` and
    ``predicates`` (the settings Connect's validate answer lists)."""
    found: dict[str, list[str]] = {"transforms": [], "predicates": []}
    predicates = _aliases(config, "predicates")
    for alias in predicates:
        prefix = f"predicates.{alias}."
        kind_name = config.get(prefix + "type", "").strip()
        if not kind_name:
            found["predicates"].append(f'Missing required configuration "{prefix}type"')
            continue
        kind = _predicate_class(kind_name)
        if kind is None:
            found["predicates"].append(
                f"Invalid value {kind_name} for configuration {prefix}type: Class {kind_name} "
                "could not be found."
            )
            continue
        found["predicates"] += _setting_problems(kind, prefix, _settings(config, prefix))
    for alias in _aliases(config, "transforms"):
        prefix = f"transforms.{alias}."
        class_name = config.get(prefix + "type", "").strip()
        if not class_name:
            found["transforms"].append(f'Missing required configuration "{prefix}type"')
            continue
        parsed = _transform_class(class_name)
        if parsed is None:
            found["transforms"].append(
                f"Invalid value {class_name} for configuration {prefix}type: Class {class_name} "
                "could not be found."
            )
            continue
        settings = _settings(config, prefix)
        found["transforms"] += _setting_problems(parsed[0], prefix, settings)
        predicate = settings.get("predicate", "").strip()
        if predicate and predicate not in predicates:
            found["transforms"].append(
                f"Invalid value {predicate} for configuration {prefix}predicate: "
                f"No predicate named {predicate} in predicates"
            )
        if settings.get("negate", "false").strip().lower() not in ("true", "false"):
            found["transforms"].append(
                f"Invalid value {settings['negate']} for configuration {prefix}negate: "
                "Expected value to be either true or false"
            )
    return {name: errors for name, errors in found.items() if errors}


def chain(config: Mapping[str, str]) -> Chain:
    """The transforms of a config ``problems`` found nothing wrong with."""
    wrong = problems(config)
    if wrong:
        raise ValueError(next(iter(wrong.values()))[0])
    predicates = {}
    for alias in _aliases(config, "predicates"):
        prefix = f"predicates.{alias}."
        kind = _predicate_class(config[prefix + "type"])
        assert kind is not None
        predicates[alias] = Predicate(alias, kind, _settings(config, prefix))
    transforms = []
    for alias in _aliases(config, "transforms"):
        prefix = f"transforms.{alias}."
        parsed = _transform_class(config[prefix + "type"])
        assert parsed is not None
        settings = _settings(config, prefix)
        transforms.append(
            Transform(
                alias,
                parsed[0],
                parsed[1],
                settings,
                predicates.get(settings.get("predicate", "").strip()),
                settings.get("negate", "false").strip().lower() == "true",
            )
        )
    return Chain(tuple(transforms))
