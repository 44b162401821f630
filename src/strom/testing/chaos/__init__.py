"""Jepsen-style chaos for strom clusters (docs/reliability.md): nemeses that inject faults into
a :class:`~strom.testing.Cluster`, workloads of real clients that record a history of what they
did and saw, a checker that names the anomalies in it, and a report a person can read.

``strom chaos run`` runs the scenarios of :mod:`strom.testing.chaos.scenarios`; the same parts
put an application of your own under the same faults.
"""

from strom.testing.chaos.checker import KINDS, Anomaly, CheckResult, check
from strom.testing.chaos.history import Event, History, Recorder, read_history, write_history
from strom.testing.chaos.nemesis import (
    DegradeLinks,
    Fault,
    FillDisk,
    Isolate,
    Kill,
    LoseUnflushed,
    Nemesis,
    Pause,
    Reassign,
    ShiftClock,
    SlowLink,
    Stop,
    mount_small_disk,
    nodes,
    unmount_small_disk,
    use_faults_files,
    use_offset_clock,
)
from strom.testing.chaos.report import write_report
from strom.testing.chaos.workloads import BankWorkload, QueueWorkload, final_read

__all__ = [
    "KINDS",
    "Anomaly",
    "BankWorkload",
    "CheckResult",
    "DegradeLinks",
    "Event",
    "Fault",
    "FillDisk",
    "History",
    "Isolate",
    "Kill",
    "LoseUnflushed",
    "Nemesis",
    "Pause",
    "QueueWorkload",
    "Reassign",
    "Recorder",
    "ShiftClock",
    "SlowLink",
    "Stop",
    "check",
    "final_read",
    "mount_small_disk",
    "nodes",
    "read_history",
    "unmount_small_disk",
    "use_faults_files",
    "use_offset_clock",
    "write_history",
    "write_report",
]
