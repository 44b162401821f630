"""The documents, run: every ``$`` example of docs/cli.md, docs/broker.md, docs/cluster.md,
docs/connect.md, docs/mirroring.md, docs/rest.md and docs/sql.md against a ``strom server`` of
its own per document, in the order a reader meets them, each output checked against the one the
document shows. A file of the reader's that names ``localhost:9092`` names that server.

The examples run in a shell in a scratch directory, ``strom`` pointed at the test's broker (a
wrapper adds ``--bootstrap-server`` where the example gives none; a document without a client
command gets no broker), ``pkill`` confined to the processes of that directory. ``strom
consume``, which runs until Ctrl-C, gets Ctrl-C as the reader would press it: once it printed
the messages the document shows and ``GRACE_S`` passed without another, or, where the document
shows none, after ``INTERRUPT_AFTER_S``. Values that differ on every run (topic ids, member
ids, timestamps, the figures of perf lines) are compared by their shape, and a command whose
output does not match yet is tried again for a few seconds (a group takes a moment to settle).
Examples that cannot run here are listed in ``NOT_RUN`` with the reason.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from strom_harness import StromServer, start_strom_server

from e2e.doc_session import Example, examples, matches

DOCS = Path(__file__).parents[2] / "docs"
INTERRUPT_AFTER_S = 2.0
GRACE_S = 0.5
"""After the last message a consume example shows, how long it may print more (it reads logs
already written: more would come in the same fetch)."""
_PROCESSED = re.compile(r"^Processed a total of (\d+) messages$")
SETTLE_S = float(os.environ.get("DOCS_SETTLE_S", "20"))
SETTLE_S_OF = dict.fromkeys(
    ["connect.md", "mirroring.md", "sql.md"], float(os.environ.get("DOCS_SPARK_SETTLE_S", "180"))
)
"""Documents whose data goes through Spark queries: a JVM that starts, a first micro-batch
(minutes on a loaded machine)."""
NOT_RUN = {
    "cat client.properties": "the reader's own client settings",
    "strom topics list --bootstrap-server broker1:9093 --command-config client.properties": (
        "a SASL_SSL cluster the reader has and this test does not"
    ),
}
FILES = {
    "cli.md": {"lines.txt": "k1:v1\nk2:v2\n"},
    "broker.md": {},
    "rest.md": {},
    "connect.md": {
        "worker.properties": "bootstrap.servers=localhost:9092\ngroup.id=connect-cluster\n"
        "config.storage.topic=connect-configs\noffset.storage.topic=connect-offsets\n"
        "status.storage.topic=connect-status\nconfig.storage.replication.factor=1\n"
        "offset.storage.replication.factor=1\nstatus.storage.replication.factor=1\n"
        "key.converter=org.apache.kafka.connect.storage.StringConverter\n"
        "value.converter=org.apache.kafka.connect.storage.StringConverter\nspark.master=local[2]\n",
        "registry.properties": "kafkastore.bootstrap.servers=localhost:9092\n"
        "listeners=http://localhost:8091\n",
    },
    "mirroring.md": {
        "mm2.properties": "clusters = A, B\nA.bootstrap.servers = localhost:9092\n"
        "B.bootstrap.servers = localhost:9192\nA->B.enabled = true\nA->B.topics = orders\n"
        "A->B.emit.checkpoints.interval.seconds = 5\nA->B.sync.group.offsets.enabled = true\n"
        "replication.factor = 1\noffset-syncs.topic.replication.factor = 1\n"
        "checkpoints.topic.replication.factor = 1\nheartbeats.topic.replication.factor = 1\n"
        "config.storage.replication.factor = 1\noffset.storage.replication.factor = 1\n"
        "status.storage.replication.factor = 1\nspark.master = local[2]\n",
        "bad.properties": "clusters = A, B\nA.bootstrap.servers = localhost:9092\n"
        "B.bootstrap.servers = localhost:9192\nA->C.enabled = true\n",
    },
    "sql.md": {
        "sql.properties": "bootstrap.servers=localhost:9092\nksql.service.id=walkthrough\n"
        "ksql.streams.auto.offset.reset=earliest\nksql.streams.state.dir=state\n"
        "ksql.schema.registry.url=http://localhost:8081\n"
        "spark.master=local[2]\nspark.sql.shuffle.partitions=1\n",
        "registry.properties": "kafkastore.bootstrap.servers=localhost:9092\n"
        "listeners=http://localhost:8081\n",
        "returns.sql": "-- returns, as a migration adds them\n"
        "CREATE STREAM returns (id STRING KEY, reason STRING)\n"
        "  WITH (KAFKA_TOPIC='returns', VALUE_FORMAT='JSON', PARTITIONS=1);\n"
        "INSERT INTO returns (id, reason) VALUES ('o2', 'bruised');\n",
    },
    "cluster.md": {
        "node.properties": "process.roles=broker,controller\nnode.id=1\n"
        "listeners=PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093\n"
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n"
        "controller.listener.names=CONTROLLER\ncontroller.quorum.voters=one@localhost:9093\n"
    },
}
"""Per document, the files of the reader's that its examples read."""
TIMEOUT_S_OF = dict.fromkeys(
    ["connect.md", "mirroring.md", "sql.md"], float(os.environ.get("DOCS_SPARK_TIMEOUT_S", "600"))
)
"""Documents whose walkthrough outlasts the suite's per-test timeout: connect.md starts a Spark
worker and five connectors, each a Spark query (minutes on a loaded machine)."""
NEEDS_POSTGRES = {"connect.md"}
"""Documents whose examples use a PostgreSQL (the one libpq's ``PG*`` variables name): the run's
(``postgres`` of ``conftest.py``); the document is skipped, saying why, where it cannot run."""
_CLIENT_COMMANDS = (
    "topics",
    "configs",
    "produce",
    "consume",
    "groups",
    "perf",
    "leader-election",
    "partitions",
    "broker",
    "users",
    "get-offsets",
    "delete-records",
    "log-dirs",
    "transactions",
    "features",
    "connect",
    "rest",
    "sql",
)
_SHAPES = [
    (re.compile(r"TopicId: [A-Za-z0-9_-]{22}"), "TopicId: <id>"),
    (
        re.compile(r"\b(app-\d)-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"),
        r"\1-<uuid>",
    ),
    (re.compile(r"CreateTime:\d{13}"), "CreateTime:<ms>"),
    (re.compile(r"\tEpoch: \d+$"), "\tEpoch: <offset>"),
    (re.compile(r"^\d+ records sent, (?=.* max latency\.$)"), "<n> records sent, "),
    (re.compile(r"\d+(\.\d+)? (records/sec|MB/sec|ms)"), r"<n> \2"),
    (re.compile(r'"(ts_ms|lsn|txId)":\d+'), r'"\1":<n>'),
    (re.compile(r'"version":"[^"]*"'), '"version":"<version>"'),
]


_CLIENT_COMMAND = re.compile(rf"\bstrom ({'|'.join(_CLIENT_COMMANDS)})\b")


def _shape(line: str) -> str:
    for pattern, replacement in _SHAPES:
        line = pattern.sub(replacement, line)
    return line.rstrip()


@pytest.fixture(
    params=[
        pytest.param(d, marks=[pytest.mark.timeout(TIMEOUT_S_OF[d])] if d in TIMEOUT_S_OF else [])
        for d in sorted(FILES)
    ]
)
def session(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, StromServer | None, Path, dict[str, str]]]:
    document = str(request.param)
    base = tmp_path_factory.mktemp("docs")
    database = None
    if document in NEEDS_POSTGRES:
        database = request.getfixturevalue("postgres")  # skips, saying why, without one
    libpq = (
        {}
        if database is None
        else {
            "PGHOST": database.host,
            "PGPORT": str(database.port),
            "PGUSER": "postgres",
            "PGDATABASE": database.database,
        }
    )
    server = None
    if any(_CLIENT_COMMAND.search(example.command) for example in _examples(document)):
        server = start_strom_server(
            data_dir=base / "data", cwd=base, overrides={"group.initial.rebalance.delay.ms": "0"}
        )
    bin_dir = base / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "strom"
    bootstrap = (
        ""
        if server is None
        else (
            f'case "$1" in {"|".join(_CLIENT_COMMANDS)})\n'
            # `strom sql shell|run` are clients of the SQL server, not of the cluster
            '  case " $* " in *" --bootstrap-server "*|" sql shell "*|" sql run "*) ;; '
            f'*) set -- "$@" --bootstrap-server {server.bootstrap} ;; esac ;;\n'
            "esac\n"
        )
    )
    wrapper.write_text(
        "#!/bin/sh\n"
        f"{bootstrap}"
        f'exec {sys.executable} -c "from strom.cli.main import main; main()" "$@"\n'
    )
    wrapper.chmod(0o755)
    # The document's ``pkill -f PATTERN``, confined to this run's processes (the ones in its
    # work directory): another checkout's run of the same examples on the machine is not hit.
    pkill = bin_dir / "pkill"
    pkill.write_text(
        "#!/bin/sh\n"
        '[ "$1" = -f ] && [ $# -eq 2 ] || { echo "pkill shim: only -f PATTERN" >&2; exit 2; }\n'
        "found=1\n"
        'for pid in $(pgrep -f "$2"); do\n'
        '  [ "$pid" != $$ ] && [ "$(readlink /proc/$pid/cwd)" = "$PWD" ] || continue\n'
        '  kill "$pid" && found=0\n'
        "done\n"
        'exit "$found"\n'
    )
    pkill.chmod(0o755)
    work = base / "work"
    work.mkdir()
    for name, text in FILES[document].items():
        (work / name).write_text(
            text if server is None else text.replace("localhost:9092", server.bootstrap)
        )
    yield document, server, work, libpq
    _stop_left_in(work)  # what a failed example left running in the background
    if server is not None:
        server.stop(signal.SIGTERM)


def _stop_left_in(work: Path) -> None:
    """SIGTERM every process still running in ``work`` (a worker the document starts with
    ``&`` and stops with its last example, when an example before that failed)."""
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and (proc / "cwd").readlink() == work:
                os.kill(int(proc.name), signal.SIGTERM)
        except OSError:
            continue


def _run(
    example: Example, work: Path, address: str | None, expected: list[str], libpq: dict[str, str]
) -> list[str]:
    env = {
        **os.environ,
        **libpq,
        "PATH": f"{work.parent / 'bin'}:{os.environ['PATH']}",
        "PYTHONFAULTHANDLER": "1",  # a command that hangs shows where, when aborted
    }
    process = subprocess.Popen(
        ["bash", "-c", example.command],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )

    def shaped(lines: list[str]) -> list[str]:
        if address is not None:
            lines = [line.replace(address, "localhost:9092") for line in lines]
        return [_shape(line) for line in lines]

    if not example.command.startswith("strom consume "):
        output, _ = process.communicate(timeout=120)
        return shaped(output.splitlines())
    printed: list[str] = []  # until Ctrl-C: read as it comes

    def read() -> None:
        for line in process.stdout or ():
            printed.append(line)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    # What it prints before Ctrl-C, and whether that holds messages: "Processed ... N" last.
    shown, total = expected[:-1], _PROCESSED.match(expected[-1]) if expected else None
    some = total is not None and int(total.group(1)) > 0
    interrupt_at = time.monotonic() + INTERRUPT_AFTER_S
    while time.monotonic() < interrupt_at and process.poll() is None:
        if some and matches(shown, shaped(printed[:])):
            time.sleep(GRACE_S)  # every message shown is printed: now only look for more
            break
        time.sleep(0.05)
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGINT)
    try:
        process.wait(60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGABRT)  # faulthandler prints where each thread is
        process.wait(30)
        reader.join(30)
        raise AssertionError(
            f"{example.command!r} still ran 60 s after Ctrl-C; it printed:\n{''.join(printed)}"
        ) from None
    reader.join(30)
    return shaped("".join(printed).splitlines())


def _examples(document: str) -> list[Example]:
    return examples((DOCS / document).read_text(encoding="utf-8"))


def test_every_example_not_run_is_still_in_a_document() -> None:
    shown = {example.command for document in FILES for example in _examples(document)}
    assert set(NOT_RUN) <= shown


def test_the_documented_commands_print_what_the_document_shows(
    session: tuple[str, StromServer | None, Path, dict[str, str]],
) -> None:
    document, server, work, libpq = session
    address = None if server is None else server.bootstrap
    for example in _examples(document):
        if example.command in NOT_RUN:
            continue
        expected = [_shape(line) for line in example.output]
        deadline = time.monotonic() + SETTLE_S_OF.get(document, SETTLE_S)
        while True:
            actual = _run(example, work, address, expected, libpq)
            if matches(expected, actual) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert matches(expected, actual), (
            f"docs/{document} line {example.line}: $ {example.command}\n"
            "shown:\n  " + "\n  ".join(expected) + "\nprinted:\n  " + "\n  ".join(actual)
        )
