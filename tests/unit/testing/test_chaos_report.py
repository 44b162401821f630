"""The chaos report: the files a run leaves behind, from a history and its check."""

from __future__ import annotations

import json
from pathlib import Path

from strom.testing.chaos.checker import KINDS, check
from strom.testing.chaos.history import read_history
from strom.testing.chaos.report import write_report

from .chaos_histories import HistoryBuilder, every_anomaly

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def faulty_run() -> HistoryBuilder:
    """Sixty acked sends over a few seconds, a healed partition and an unhealed kill, and a
    final read missing one value and holding one nobody wrote (60 more than the table shows)."""
    b = HistoryBuilder(step=0.02)
    b.fault_start("partition", ["broker-1", "broker-2"])
    for offset in range(60):
        b.send("producer-0", "t", 0, f"v{offset}", offset)
        b.poll("consumer-0", ("t", 0, offset, f"v{offset}"))
        if offset == 30:
            b.fault_heal("partition", ["broker-1", "broker-2"])
            b.fault_start("kill", ["broker-3"])
    b.send("producer-0", "t", 0, "late", outcome="info")
    b.send("producer-0", "t", 0, "refused", outcome="fail")
    records = [("t", 0, offset, f"v{offset}") for offset in range(1, 60)]
    records += [("t", 1, offset, f"stray{offset}") for offset in range(60)]
    b.final_read(*records)
    return b


def test_the_report_holds_the_history_the_verdict_the_tables_and_the_timeline(
    tmp_path: Path,
) -> None:
    history = faulty_run().events
    result = check(history)
    details = {"scenario": "partition-then-kill", "seed": "42"}
    report = write_report(history, result, tmp_path / "run", title="Chaos run", details=details)

    assert report == tmp_path / "run" / "report.md"
    text = report.read_text()
    assert text.startswith("# Chaos run\n")
    assert "- **seed**: 42" in text
    assert "**Verdict: INVALID**: lost-write (1), unexpected (60)." in text
    assert "## lost-write (1)\n\n| description | topic | partition | offset | value |" in text
    assert "## unexpected (60)\n\n| description | value | reads | count |" in text
    assert "... and 10 more (all in anomalies.jsonl)." in text
    assert '| partition | ["broker-1","broker-2"] | 0.000 | ' in text
    assert '| kill | ["broker-3"] | ' in text and "| never healed |" in text

    assert read_history(tmp_path / "run" / "history.jsonl") == history
    summary = json.loads((tmp_path / "run" / "result.json").read_text())
    assert summary["valid"] is False
    assert summary["anomalies"] == {"lost-write": 1, "unexpected": 60}
    assert summary["stats"]["sends_ok"] == 60
    assert summary["details"] == details
    lines = (tmp_path / "run" / "anomalies.jsonl").read_text().splitlines()
    assert len(lines) == 61

    png = (tmp_path / "run" / "timeline.png").read_bytes()
    assert png.startswith(PNG_SIGNATURE)
    assert len(png) > 20_000


def test_each_kind_found_has_its_table(tmp_path: Path) -> None:
    history = every_anomaly().events
    result = check(history, min_acks_after_heal=1)
    text = write_report(history, result, tmp_path, title="Everything").read_text()
    for kind, found in result.anomalies.items():
        table = text.split(f"\n## {kind} ({len(found)})\n\n| description |", 1)[1]
        assert len(table.split("\n\n", 1)[0].splitlines()) == 2 + len(found)
    assert set(json.loads((tmp_path / "result.json").read_text())["anomalies"]) == set(KINDS)


def test_a_valid_run_s_report(tmp_path: Path) -> None:
    b = HistoryBuilder()
    b.send("producer-0", "t", 0, "a", 0)
    b.final_read(("t", 0, 0, "a"))
    report = write_report(b.events, check(b.events), tmp_path, title="Quiet run")
    text = report.read_text()
    assert "**Verdict: valid** (no anomalies found)." in text
    assert "Not checked: no-progress (min_acks_after_heal is 0)." in text
    assert (
        "## Faults\n\n| name | targets | start (s) | end (s) |\n| --- | --- | --- | --- |\n" in text
    )
    assert (tmp_path / "timeline.png").read_bytes().startswith(PNG_SIGNATURE)


def test_an_empty_history_still_reports(tmp_path: Path) -> None:
    report = write_report([], check([]), tmp_path, title="Nothing happened")
    assert "**Verdict: valid**" in report.read_text()
    assert "lost-write" in json.loads((tmp_path / "result.json").read_text())["unchecked"]
