"""Prometheus's text exposition format (version 0.0.4), written directly.

prometheus_client's ``generate_latest`` builds a ``Sample`` tuple and escapes every label of
every sample at each scrape: 40,000 per-partition samples (a broker of 10,000 partitions) took
630-780 ms on the project's VM, over the 200 ms a scrape may stall the node's loop. Here a
family is a list of ready lines, and the label text of a partition is made once and reused
(:func:`labels`, cached by the caller), which brings the same scrape to docs/benchmarks.md's
figure. prometheus_client's parser reads the result (the tests check it).
"""

from __future__ import annotations

import math
from typing import Final

__all__ = ["COUNTER", "GAUGE", "SUMMARY", "Family", "counter", "gauge", "labels", "render"]

COUNTER: Final = "counter"
GAUGE: Final = "gauge"
SUMMARY: Final = "summary"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def labels(**values: str) -> str:
    """``{name="value",...}`` with the values escaped (names are given by strom)."""
    inner = ",".join(f'{name}="{_escape(value)}"' for name, value in values.items())
    return "{" + inner + "}"


def _number(value: float) -> str:
    if isinstance(value, int):
        return str(value)
    if math.isfinite(value):
        return repr(value)
    if math.isnan(value):
        return "NaN"
    return "+Inf" if value > 0 else "-Inf"


class Family:
    """One metric family: its HELP and TYPE, then its samples' lines. A counter's samples
    are ``name_total``; a summary's ``name{quantile=...}``, ``name_count`` and ``name_sum``."""

    __slots__ = ("doc", "kind", "lines", "name")

    def __init__(self, name: str, kind: str, doc: str) -> None:
        self.name = name
        self.kind = kind
        self.doc = doc
        self.lines: list[str] = []

    def add(self, value: float, label_text: str = "", suffix: str = "") -> None:
        """A sample: ``label_text`` from :func:`labels` (empty: none); ``suffix`` after the
        name (``_total`` is added to a counter's)."""
        if self.kind == COUNTER:
            suffix = "_total"
        self.lines.append(f"{self.name}{suffix}{label_text} {_number(value)}")


def gauge(name: str, doc: str, value: float, label_text: str = "") -> Family:
    """A family of one gauge sample."""
    family = Family(name, GAUGE, doc)
    family.add(value, label_text)
    return family


def counter(name: str, doc: str, value: float) -> Family:
    """A family of one counter sample (``name_total``)."""
    family = Family(name, COUNTER, doc)
    family.add(value)
    return family


def render(families: list[Family]) -> bytes:
    """The families in the text format."""
    out: list[str] = []
    for family in families:
        typed = family.name + "_total" if family.kind == COUNTER else family.name
        doc = family.doc.replace("\\", "\\\\").replace("\n", "\\n")
        out.append(f"# HELP {typed} {doc}\n# TYPE {typed} {family.kind}")
        out.extend(family.lines)
    out.append("")
    return "\n".join(out).encode()
