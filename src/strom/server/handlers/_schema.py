"""Build kio response bodies for any version of an API from one set of values.

kio has one module per API version, each with its own classes, whose fields differ between
versions (a field appears in the version that introduced it). The data handlers serve many
versions each (Fetch: v4 to v17), so they name every value once and let :func:`build` keep the
fields the version's class has: the generated classes themselves say which fields exist.
"""

from __future__ import annotations

import dataclasses
import sys
from functools import cache
from types import ModuleType
from typing import Any

from strom.protocol.api import response_type

__all__ = ["build", "response_module"]


@cache
def response_module(api_key: int, version: int) -> ModuleType:
    """kio's module of the response of ``api_key`` at ``version`` (its classes by name)."""
    return sys.modules[response_type(api_key, version).__module__]


_FIELD_NAMES: dict[type[Any], frozenset[str]] = {}


def _field_names(entity_type: type[Any]) -> frozenset[str]:
    names = _FIELD_NAMES.get(entity_type)
    if names is None:
        names = _FIELD_NAMES[entity_type] = frozenset(
            f.name for f in dataclasses.fields(entity_type)
        )
    return names


def build(entity_type: type[Any], /, **values: Any) -> Any:
    """An instance of ``entity_type`` from the values it has fields for (others are dropped).

    A field without a value takes its default; kio raises TypeError for a required one.
    """
    names = _field_names(entity_type)
    return entity_type(**{name: value for name, value in values.items() if name in names})
