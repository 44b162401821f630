"""A chaos run's report, written into one directory: the history (``history.jsonl``), what a
person reads (``report.md``, with ``timeline.png``), and what a machine reads (``result.json``,
``anomalies.jsonl``). Pure of any broker: a history and its :class:`CheckResult` in, files out.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from strom.testing.chaos.checker import Anomaly, CheckResult
from strom.testing.chaos.history import Event, write_history
from strom.testing.chaos.operations import FaultWindow, fault_windows

__all__ = ["write_report"]

_MAX_ROWS: Final = 50
"""Rows of each anomaly table in report.md (anomalies.jsonl has them all)."""
_MAX_CELL: Final = 80
_MAX_BINS: Final = 400
"""The timeline's resolution: one-second bins, wider for runs longer than this many seconds."""


def write_report(
    history: Sequence[Event],
    result: CheckResult,
    directory: Path,
    *,
    title: str,
    details: Mapping[str, str] = {},
) -> Path:
    """Writes the report's files into ``directory`` (made if missing); returns report.md's path."""
    directory.mkdir(parents=True, exist_ok=True)
    windows = fault_windows(history)
    write_history(history, directory / "history.jsonl")
    _write_json(directory / "result.json", _result_json(result, title, details))
    with (directory / "anomalies.jsonl").open("w", encoding="utf-8") as file:
        for found in result.anomalies.values():
            file.writelines(json.dumps(_anomaly_json(anomaly)) + "\n" for anomaly in found)
    _plot_timeline(history, windows, directory / "timeline.png")
    report = directory / "report.md"
    report.write_text(_markdown(result, windows, title, details), encoding="utf-8")
    return report


def _result_json(result: CheckResult, title: str, details: Mapping[str, str]) -> dict[str, Any]:
    return {
        "title": title,
        "details": dict(details),
        "valid": result.valid,
        "stats": result.stats.as_dict(),
        "anomalies": result.counts(),
        "unchecked": dict(result.unchecked),
    }


def _anomaly_json(anomaly: Anomaly) -> dict[str, Any]:
    return {
        "kind": anomaly.kind,
        "description": anomaly.description,
        "details": dict(anomaly.details),
    }


def _write_json(path: Path, value: Any) -> None:
    path.write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")


def _markdown(
    result: CheckResult, windows: Sequence[FaultWindow], title: str, details: Mapping[str, str]
) -> str:
    lines = [f"# {title}", ""]
    lines += [f"- **{name}**: {value}" for name, value in details.items()]
    lines += ["", _verdict(result), ""]
    if result.unchecked:
        lines += [f"Not checked: {kind} ({why})." for kind, why in result.unchecked.items()]
        lines += [""]
    lines += ["## Stats", ""]
    stats = result.stats.as_dict().items()
    lines += _table(["stat", "count"], [[name, str(count)] for name, count in stats])
    for kind, found in result.anomalies.items():
        lines += ["", f"## {kind} ({len(found)})", ""]
        lines += _anomaly_table(found)
    lines += ["", "## Faults", ""]
    lines += _table(["name", "targets", "start (s)", "end (s)"], map(_fault_row, windows))
    lines += ["", "## Timeline", "", "![timeline](timeline.png)", ""]
    return "\n".join(lines)


def _verdict(result: CheckResult) -> str:
    if result.valid:
        return "**Verdict: valid** (no anomalies found)."
    kinds = ", ".join(f"{kind} ({count})" for kind, count in result.counts().items())
    return f"**Verdict: INVALID**: {kinds}."


def _anomaly_table(found: Sequence[Anomaly]) -> list[str]:
    shown = found[:_MAX_ROWS]
    keys = list(dict.fromkeys(key for anomaly in shown for key in anomaly.details))
    rows = [
        [_escaped(anomaly.description), *(_cell(anomaly.details.get(key, "")) for key in keys)]
        for anomaly in shown
    ]
    lines = _table(["description", *keys], rows)
    if len(found) > len(shown):
        lines += ["", f"... and {len(found) - len(shown)} more (all in anomalies.jsonl)."]
    return lines


def _fault_row(window: FaultWindow) -> list[str]:
    end = "never healed" if window.end is None else f"{window.end:.3f}"
    return [_escaped(window.name), _cell(window.targets), f"{window.start:.3f}", end]


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    return [_row(header), _row(["---"] * len(header)), *map(_row, rows)]


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _cell(value: Any) -> str:
    """A detail as a table cell: JSON, cut to ``_MAX_CELL`` characters."""
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    if len(text) > _MAX_CELL:
        text = text[: _MAX_CELL - 3] + "..."
    return _escaped(text)


def _escaped(text: str) -> str:
    return text.replace("\n", " ").replace("|", "\\|")


def _plot_timeline(history: Sequence[Event], windows: Sequence[FaultWindow], path: Path) -> None:
    """Writes a PNG: acknowledged writes and values read per second above, failed and unknown
    operations per second below, each fault window shaded and named on both."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: PLC0415 (heavy)
    from matplotlib.figure import Figure  # noqa: PLC0415

    end = max((event.time for event in history), default=0.0)
    width = max(1.0, end / _MAX_BINS)
    rates = _rates(history, width, int(end // width) + 1)
    edges = [bin_ * width for bin_ in range(len(rates["acked"]) + 1)]
    figure = Figure(figsize=(12, 6), layout="constrained")
    FigureCanvasAgg(figure)
    top = figure.add_subplot(2, 1, 1)
    bottom = figure.add_subplot(2, 1, 2, sharex=top)
    top.stairs(rates["acked"], edges, label="acknowledged sends and txns")
    top.stairs(rates["read"], edges, label="values read")
    bottom.stairs(rates["fail"], edges, color="tab:red", label="fail")
    bottom.stairs(rates["info"], edges, color="tab:orange", label="info")
    for window in windows:
        stop = end if window.end is None else window.end
        for axes in (top, bottom):
            axes.axvspan(window.start, stop, color="tab:gray", alpha=0.2)
        top.annotate(
            window.name,
            xy=(window.start, 1.0),
            xycoords=("data", "axes fraction"),
            xytext=(2, -2),
            textcoords="offset points",
            rotation=90,
            va="top",
            fontsize=8,
        )
    for axes in (top, bottom):
        axes.set_ylabel("per second")
        axes.set_ylim(bottom=0)
    bottom.set_xlabel("seconds since the start")
    top.legend(loc="upper right")
    bottom.legend(loc="upper right")
    figure.savefig(path, dpi=100)


def _rates(history: Sequence[Event], width: float, bins: int) -> dict[str, list[float]]:
    """Per bin of ``width`` seconds: the rate of acked writes, values read, fails and infos."""
    counts = {series: [0] * bins for series in ("acked", "read", "fail", "info")}
    for event in history:
        bin_ = int(event.time // width)
        if event.type == "ok" and event.f in ("send", "txn"):
            counts["acked"][bin_] += 1
        elif event.type == "ok" and event.f == "poll":
            counts["read"][bin_] += len(event.value.get("records", ()))
        elif event.type in ("fail", "info") and event.f != "fault":
            counts[event.type][bin_] += 1
    return {series: [n / width for n in found] for series, found in counts.items()}
