"""The reliability suite's bounded subset (docs/reliability.md): scenarios 1, 3, 4, 6, 8 and 12
on real 3-broker, 3-controller clusters, each checked for Jepsen's anomalies, and 17 (delay and
loss between nodes) through ``strom chaos run``, which runs any of them, and the others, for
longer."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic
from strom_harness import free_ports_in_a_row

from strom.cli.main import cli
from strom.testing import Cluster, netns_unavailable
from strom.testing.chaos import Nemesis, Recorder, ShiftClock, nodes, use_offset_clock
from strom.testing.chaos.runner import run_scenario
from strom.testing.chaos.scenarios import scenario_named

pytestmark = pytest.mark.xdist_group("cluster")  # one cluster at a time on 2 cores

FAULT_SECONDS = 6.0
"""Long enough for a fault and its heal; ``strom chaos run --duration`` goes longer."""


@pytest.mark.timeout(240)
@pytest.mark.parametrize(
    "name",
    [
        "leader-kill",
        "two-replicas-down",
        "isolate-leader",
        "controller-kill-during-creates",
        "pause-leader",
        "txn-coordinator-kill",
    ],
)
def test_scenario_keeps_every_guarantee(name: str, tmp_path: Path) -> None:
    scenario = scenario_named(name)
    if scenario.network == "netns" and (reason := netns_unavailable()) is not None:
        pytest.skip(reason)
    lines: list[str] = []
    outcome = run_scenario(
        scenario,
        duration=FAULT_SECONDS,
        seed=7,
        report_dir=tmp_path / "report",
        progress=lines.append,
        data_dir=tmp_path / "cluster",
    )
    assert outcome.valid, f"{outcome.result.summary()}\n{outcome.report.read_text()}"
    assert outcome.result.stats.faults >= 1, lines  # the nemesis struck
    assert (tmp_path / "report" / "timeline.png").stat().st_size > 1000


def test_strom_chaos_run_reports_and_exits_zero(tmp_path: Path) -> None:
    base = free_ports_in_a_row(12)
    result = CliRunner().invoke(
        cli,
        [
            "chaos",
            "run",
            "--scenario",
            "lossy-links",
            "--duration",
            "4s",
            "--seed",
            "3",
            "--report",
            str(tmp_path),
            "--base-port",
            str(base),
        ],
    )
    assert result.exit_code == 0, result.output
    brokers = ",".join(f"127.0.0.1:{base + 2 * n}" for n in (3, 4, 5))  # after 3 controllers
    assert f"({brokers})" in result.output
    assert "seed 3" in result.output
    assert "faults for 4 s" in result.output
    assert (tmp_path / "lossy-links" / "report.md").is_file()


def test_strom_chaos_run_refuses_an_unknown_scenario() -> None:
    result = CliRunner().invoke(cli, ["chaos", "run", "--scenario", "no-such"])
    assert result.exit_code != 0
    assert "no scenario 'no-such'" in result.output


def test_a_shifted_clock_moves_the_broker_s_time(tmp_path: Path) -> None:
    """The clock nemesis reaches the code that reads time: LogAppendTime stamps follow it."""
    hour_ms = 3_600_000
    cluster = Cluster(brokers=1, controllers=1, data_dir=tmp_path)
    use_offset_clock(cluster)
    with cluster:
        topic = "stamped"
        admin = AdminClient(cluster.admin_config())
        stamped = NewTopic(topic, 1, 1, config={"message.timestamp.type": "LogAppendTime"})
        admin.create_topics([stamped])[topic].result(30)
        recorder = Recorder()
        nemesis = Nemesis(cluster, recorder)
        shift = ShiftClock(nodes(1), offset_ms=hour_ms)
        nemesis.start(shift)
        time.sleep(0.3)  # the offset file is looked at every 100 ms
        shifted = _append_time(cluster, topic)
        nemesis.heal(shift)
        time.sleep(0.3)
        healed = _append_time(cluster, topic)
    now_ms = time.time() * 1000
    assert abs(shifted - (now_ms + hour_ms)) < 60_000
    assert abs(healed - now_ms) < 60_000
    assert [(e.type, e.value["name"]) for e in recorder.history()] == [
        ("invoke", "shift-clock"),
        ("ok", "shift-clock"),
    ]


def _append_time(cluster: Cluster, topic: str) -> int:
    producer = Producer(cluster.producer_config())
    stamps: list[int] = []
    producer.produce(topic, b"v", on_delivery=lambda _, m: stamps.append(m.timestamp()[1]))
    assert producer.flush(30) == 0
    return stamps[0]
