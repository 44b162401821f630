"""``strom chaos``: put a local strom cluster under faults and check what its clients saw.

* ``strom chaos list``: the scenarios, what each does and the guarantee it checks.
* ``strom chaos run --scenario NAME|NUMBER|all --duration 60s --seed N --report DIR``: each
  scenario on a fresh local cluster (``strom.testing.Cluster``), its report in ``DIR/NAME``;
  exits 1 when any run shows an anomaly or could not run (a network scenario without root).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import click
from rich.table import Table

from strom.cli.client_common import ClientGroup, CliError, output_console

__all__ = ["chaos"]

_DURATION = re.compile(r"(?P<amount>\d+(?:\.\d+)?)(?P<unit>ms|s|m)?")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, None: 1.0}


def parse_duration(text: str) -> float:
    """Seconds in ``90``, ``90s``, ``1.5m`` or ``500ms``."""
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise CliError(f"'--duration': {text!r} is not a duration such as 60s, 2m or 500ms")
    return float(match["amount"]) * _UNITS[match["unit"]]


@click.group("chaos", cls=ClientGroup)
def chaos() -> None:
    """Fault scenarios on a local cluster, checked for lost, duplicated or misordered data."""


@chaos.command("list")
def list_scenarios() -> None:
    """List the scenarios."""
    from strom.testing.chaos.scenarios import SCENARIOS  # noqa: PLC0415 - on use only

    table = Table(box=None, show_lines=False)
    table.add_column("#", no_wrap=True)
    table.add_column("NAME", no_wrap=True)  # a name is what `strom chaos run` takes: never cut
    table.add_column("FAULT")
    table.add_column("GUARANTEE")
    for scenario in SCENARIOS:
        table.add_row(str(scenario.number), scenario.name, scenario.description, scenario.guarantee)
    output_console(wrap=True).print(table)


@chaos.command("run")
@click.option(
    "--scenario",
    "names",
    required=True,
    multiple=True,
    help="A scenario's name or number (strom chaos list), or 'all'; repeatable.",
)
@click.option("--duration", default="30s", show_default=True, help="How long faults go on.")
@click.option("--seed", type=int, default=None, help="Seed for the faults (default: random).")
@click.option(
    "--report",
    "report_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("chaos-reports"),
    show_default=True,
    help="Directory for the reports (one subdirectory per scenario).",
)
@click.option(
    "--base-port",
    type=click.IntRange(1, 65535),
    default=None,
    help="The nodes listen on this port and the ones after it (two a node).  [default: free ports]",
)
def run(
    *,
    names: tuple[str, ...],
    duration: str,
    seed: int | None,
    report_dir: Path,
    base_port: int | None,
) -> None:
    """Run scenarios and check their histories; exit 1 on any anomaly.

    \b
    Examples:
      strom chaos run --scenario leader-kill --duration 60s --seed 7 --report ./reports
      strom chaos run --scenario all --duration 2m
    """
    from strom.testing.chaos.runner import run_scenario  # noqa: PLC0415 - on use only
    from strom.testing.chaos.scenarios import SCENARIOS, scenario_named  # noqa: PLC0415
    from strom.testing.cluster import ClusterError  # noqa: PLC0415
    from strom.testing.netns import NetnsError  # noqa: PLC0415

    seconds = parse_duration(duration)
    try:
        chosen = list(SCENARIOS) if "all" in names else [scenario_named(name) for name in names]
    except KeyError as error:
        raise CliError(str(error.args[0])) from None
    run_seed = seed if seed is not None else int(time.time()) % 100_000
    console = output_console()
    console.print(f"seed {run_seed}")
    verdicts: list[tuple[str, str, str]] = []
    for scenario in chosen:
        started = time.monotonic()

        def progress(line: str, *, name: str = scenario.name, at: float = started) -> None:
            console.print(f"[{name} {time.monotonic() - at:5.0f}s] {line}", highlight=False)

        try:
            outcome = run_scenario(
                scenario,
                duration=seconds,
                seed=run_seed,
                report_dir=report_dir / scenario.name,
                progress=progress,
                base_port=base_port,
            )
        except (ClusterError, NetnsError, OSError) as error:
            # The cluster could not be run as the scenario needs: no verdict, never a pass.
            progress(f"error: {_first_line(error)}")
            verdicts.append((scenario.name, "ERROR", _first_line(error)))
            continue
        console.print(outcome.result.summary(), highlight=False)
        console.print(f"report: {outcome.report}", highlight=False)
        verdicts.append(
            (scenario.name, "ok" if outcome.valid else "ANOMALIES", str(outcome.report))
        )
    table = Table("SCENARIO", "RESULT", "REPORT", box=None)
    for row in verdicts:
        table.add_row(*row)
    console.print(table)
    if any(verdict != "ok" for _, verdict, _ in verdicts):
        raise SystemExit(1)


def _first_line(error: BaseException) -> str:
    """An error's first line, or its type when it has no message (a bare ``TimeoutError``)."""
    lines = str(error).splitlines()
    return lines[0] if lines else type(error).__name__
