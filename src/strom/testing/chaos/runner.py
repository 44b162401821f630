"""Runs one scenario end to end: a fresh cluster, the topics, the workload under the nemesis
for ``duration`` seconds, every fault healed, a recovery period, the final read, the checker,
and the report (``strom chaos run`` and the reliability tests call :func:`run_scenario`)."""

from __future__ import annotations

import random
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from strom.testing.chaos.checker import CheckResult, check
from strom.testing.chaos.history import Event, Recorder
from strom.testing.chaos.nemesis import (
    Nemesis,
    mount_small_disk,
    unmount_small_disk,
    use_faults_files,
    use_offset_clock,
)
from strom.testing.chaos.report import write_report
from strom.testing.chaos.scenarios import PARTITIONS, FaultSchedule, Scenario
from strom.testing.chaos.workloads import (
    BankWorkload,
    QueueWorkload,
    Workload,
    final_read,
)
from strom.testing.cluster import Cluster, ClusterError

__all__ = ["CHAOS_CLUSTER_SETTINGS", "RunResult", "run_scenario"]

CHAOS_CLUSTER_SETTINGS: Final[Mapping[str, str]] = {
    "default.replication.factor": "3",
    "min.insync.replicas": "2",
    "offsets.topic.replication.factor": "3",
    "transaction.state.log.replication.factor": "3",
    "transaction.state.log.min.isr": "2",
    "replica.lag.time.max.ms": "3000",
    "replica.fetch.wait.max.ms": "200",
    "replica.fetch.backoff.ms": "200",
    "unclean.leader.election.enable": "false",
}
"""The issue's cluster: RF 3 and min ISR 2 everywhere, internal topics included; replicas
that stop fetching leave the ISR after 3 s."""

_TIMED_OUT: Final = (KafkaError._TIMED_OUT, KafkaError.REQUEST_TIMED_OUT)
_WARNING: Final = re.compile(r" (WARNING|ERROR|CRITICAL) ")

WARMUP_SECONDS: Final = 2.0
RECOVERY_TIMEOUT: Final = 30.0

Progress = Callable[[str], None]


@dataclass(frozen=True)
class RunResult:
    scenario: Scenario
    result: CheckResult
    report: Path
    """report.md in the report directory."""

    @property
    def valid(self) -> bool:
        return self.result.valid


def _workload(scenario: Scenario, topic: str, seed: int) -> Workload:
    if scenario.workload == "bank":
        return BankWorkload(prefix=topic, partitions=PARTITIONS, seed=seed)
    if scenario.workload == "group":
        return QueueWorkload(topic, partitions=PARTITIONS, commits=True, churn=3.0)
    return QueueWorkload(topic, partitions=PARTITIONS)


def _key(scenario: Scenario, workload: Workload, topic: str) -> str:
    """The group or transactional id a coordinator scenario strikes at."""
    if isinstance(workload, BankWorkload):
        return f"{workload.prefix}-worker-0"
    if isinstance(workload, QueueWorkload):
        return workload.group
    return topic


def _assignment(avoid_leading: int | None) -> list[list[int]]:
    """Replicas on brokers 1-3 (a fourth starts empty), preferred leaders spread over them;
    ``avoid_leading`` never the preferred leader."""
    replicas = [1, 2, 3]
    placements = [replicas[p % 3 :] + replicas[: p % 3] for p in range(PARTITIONS)]
    if avoid_leading is None:
        return placements
    return [[b for b in placed if b != avoid_leading] + [avoid_leading] for placed in placements]


def _create_topics(
    cluster: Cluster,
    admin: AdminClient,
    names: tuple[str, ...],
    *,
    avoid_leading: int | None = None,
    progress: Progress,
) -> None:
    """Create the workload's topics before any fault; a creation that times out is asked
    again once (a repeated creation meets the topic it made), then fails with what the nodes
    logged."""
    assignment = _assignment(avoid_leading)
    missing = list(names)
    for attempt in (1, 2):
        topics = [
            NewTopic(name, len(assignment), replica_assignment=assignment) for name in missing
        ]
        for name, future in admin.create_topics(topics, request_timeout=30).items():
            try:
                future.result(timeout=40)
            except KafkaException as error:
                code = error.args[0].code()
                if code in _TIMED_OUT:
                    continue
                if code != KafkaError.TOPIC_ALREADY_EXISTS or attempt == 1:
                    raise
            except TimeoutError:
                continue
            missing.remove(name)
        if not missing:
            return
        progress(f"creating {', '.join(missing)} timed out (attempt {attempt})")
    raise ClusterError(
        f"creating {', '.join(missing)} timed out twice; the nodes logged: {_warnings(cluster)}"
    )


def _warnings(cluster: Cluster, *, per_node: int = 3) -> str:
    """The last warnings and errors of every node, for an error message."""
    found = []
    for node_id, node in cluster.nodes.items():
        lines = [line.strip() for line in node.lines if _WARNING.search(line)]
        found += [f"[{node_id}] {line}" for line in lines[-per_node:]]
    return " | ".join(found) or "no warnings"


def _topic_creator(admin: AdminClient, recorder: Recorder) -> Callable[[str], None]:
    """Creates topics for the controller scenario, recording each as a ``create-topic``."""

    def create(name: str) -> None:
        recorder.record("creator", "invoke", "create-topic", {"topic": name})
        futures = admin.create_topics(
            [NewTopic(name, num_partitions=1, replication_factor=3)], request_timeout=10
        )
        try:
            futures[name].result(timeout=15)
        except KafkaException as error:
            # A retry after a failover finds the topic its first attempt made: created.
            if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                recorder.record(
                    "creator", "info", "create-topic", {"topic": name}, error=str(error)
                )
                return
        recorder.record("creator", "ok", "create-topic", {"topic": name})

    return lambda name: threading.Thread(target=create, args=(name,), daemon=True).start()


def run_scenario(
    scenario: Scenario,
    *,
    duration: float,
    seed: int,
    report_dir: Path,
    progress: Progress = lambda _: None,
    data_dir: Path | None = None,
    base_port: int | None = None,
) -> RunResult:
    """Run ``scenario`` with faults for ``duration`` seconds; write the report to
    ``report_dir`` and return the checker's verdict. The nodes' data and logs go to
    ``data_dir``, or to a temporary directory removed after a valid run (kept, and named in the
    progress, after anomalies or an error). ``base_port``: the nodes' first port (see
    ``Cluster``; a scenario in network namespaces has its own addresses)."""
    temporary = data_dir is None
    base = Path(tempfile.mkdtemp(prefix="strom-chaos-")) if data_dir is None else data_dir
    cluster = Cluster(
        brokers=scenario.brokers,
        controllers=scenario.controllers,
        data_dir=base,
        config=CHAOS_CLUSTER_SETTINGS,
        network=scenario.network,
        base_port=base_port,
    )
    victim_disk = cluster.broker_ids[-1] if scenario.small_disk else None
    try:
        if victim_disk is not None:
            mount_small_disk(cluster, victim_disk, megabytes=scenario.small_disk or 64)
        if scenario.clock:
            use_offset_clock(cluster)
        use_faults_files(cluster)
        progress(f"starting {len(cluster.nodes)} nodes in {base} ({cluster.bootstrap_servers})")
        cluster.start()
        outcome = _run_on(
            cluster,
            scenario,
            duration=duration,
            seed=seed,
            report_dir=report_dir,
            progress=progress,
            avoid_leading=victim_disk,
        )
    except BaseException:
        progress(f"kept the nodes' data and logs in {base}")
        raise
    finally:
        cluster.stop()
        if victim_disk is not None:
            unmount_small_disk(cluster, victim_disk)
    if temporary and outcome.valid:
        shutil.rmtree(base, ignore_errors=True)
    elif not outcome.valid:
        progress(f"kept the nodes' data and logs in {base}")
    return outcome


def _run_on(
    cluster: Cluster,
    scenario: Scenario,
    *,
    duration: float,
    seed: int,
    report_dir: Path,
    progress: Progress,
    avoid_leading: int | None,
) -> RunResult:
    topic = f"chaos-{scenario.name}-{seed}"
    # No ``logger`` here: an AdminClient that forwards its log would need polling for its
    # futures to complete. Its log lines are only noise during faults.
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "log_level": 0})
    workload = _workload(scenario, topic, seed)
    _create_topics(cluster, admin, workload.topics, avoid_leading=avoid_leading, progress=progress)
    recorder = Recorder()
    nemesis = Nemesis(cluster, recorder)
    schedule = FaultSchedule(
        cluster=cluster,
        nemesis=nemesis,
        topic=workload.topics[0],
        key=_key(scenario, workload, topic),
        rng=random.Random(seed),
        deadline=0.0,
        create_topic=_topic_creator(admin, recorder),
    )
    progress(f"workload {scenario.workload} on {', '.join(workload.topics)}")
    workload.start(cluster.bootstrap_servers, recorder)
    try:
        time.sleep(WARMUP_SECONDS)
        schedule.deadline = time.monotonic() + duration
        progress(f"faults for {duration:g} s: {scenario.description}")
        _with_progress(lambda: scenario.faults(schedule), recorder, progress)
        nemesis.heal_all()
        progress("healed; waiting for writes to be acknowledged again")
        _await_progress(recorder, scenario.min_acks_after_heal)
    finally:
        nemesis.heal_all()
        workload.stop()
    progress("final read")
    final_read(cluster.bootstrap_servers, workload.topics, recorder)
    topics = sorted(admin.list_topics(timeout=30).topics)
    recorder.record("final-reader", "ok", "final-topics", {"topics": topics})
    history = recorder.history()
    result = check(history, min_acks_after_heal=scenario.min_acks_after_heal)
    details = {
        "scenario": f"{scenario.number} {scenario.name}",
        "what": scenario.description,
        "guarantee": scenario.guarantee,
        "duration": f"{duration:g} s of faults",
        "seed": str(seed),
        "cluster": f"{scenario.brokers} brokers, {scenario.controllers} controllers, RF 3, "
        "min.insync.replicas=2",
    }
    report = write_report(
        history, result, report_dir, title=f"strom chaos: {scenario.name}", details=details
    )
    return RunResult(scenario=scenario, result=result, report=report)


def _with_progress(run: Callable[[], None], recorder: Recorder, progress: Progress) -> None:
    """Run the fault schedule, printing the acknowledged writes every few seconds."""
    done = threading.Event()

    def report() -> None:
        while not done.wait(5.0):
            history = recorder.history()
            acks = _acknowledged_writes(history)
            errors = sum(1 for e in history if e.type in ("fail", "info"))
            progress(f"{recorder.elapsed():6.1f} s: {acks} acknowledged, {errors} errors")

    reporter = threading.Thread(target=report, daemon=True)
    reporter.start()
    try:
        run()
    finally:
        done.set()
        reporter.join()


def _acknowledged_writes(events: Iterable[Event]) -> int:
    """Sends and transactions acknowledged among ``events``."""
    return sum(1 for e in events if e.type == "ok" and e.f in ("send", "txn"))


def _await_progress(recorder: Recorder, minimum: int) -> None:
    """Until ``minimum`` writes are acknowledged after the heal (the checker judges it)."""
    healed = len(recorder)
    deadline = time.monotonic() + RECOVERY_TIMEOUT
    while time.monotonic() < deadline:
        recent = recorder.history()[healed:]
        if _acknowledged_writes(recent) >= minimum:
            time.sleep(1.0)  # and a little more, so consumers catch up with them
            return
        time.sleep(0.2)
