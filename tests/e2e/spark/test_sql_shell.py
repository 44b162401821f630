"""`strom sql run` and `strom sql shell`, real processes, against a SQL server (its REST API) on a
real `strom server`, the server's queries in the suite's one SparkSession: a script runs in
order and stops at its first error; the shell reads stdin (piped, and on a terminal as a user
types: prompts, a statement over lines, Ctrl-C ending a push query), prints tables and rows,
keeps `SET` properties and runs `RUN SCRIPT`."""

from __future__ import annotations

import os
import pty
import select
import signal
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pyspark.sql import SparkSession
from strom_harness import StromServer

from e2e.spark.clients import unique_topic
from e2e.spark.sql_api import WAIT_S, sql_settings
from strom.sql.server import SqlServer
from strom.sql.settings import SqlSettings
from strom.testing.certificates import CertificateAuthority

pytestmark = pytest.mark.timeout(300)  # Spark queries: slow when loaded


@pytest.fixture
def sql_server(
    spark: SparkSession, broker: StromServer, tmp_path: Path
) -> Iterator[tuple[SqlServer, str]]:
    """A SQL server of its own service id, and a topic name for its stream of orders."""
    settings = sql_settings(broker.bootstrap, unique_topic("sql-shell"), tmp_path / "state")
    server = SqlServer(settings, spark=lambda: spark)
    server.start()
    yield server, unique_topic("sql-shell-orders")
    server.stop()


def _strom(
    *args: str, input: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "strom", *args],
        input=input,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        check=False,
    )


def _create(orders: str) -> str:
    return (
        "CREATE STREAM orders (id STRING KEY, amount DOUBLE)\n"
        f"  WITH (KAFKA_TOPIC='{orders}', VALUE_FORMAT='JSON', PARTITIONS=1);\n"
        "INSERT INTO orders (id, amount) VALUES ('o1', 3.5);\n"
        "INSERT INTO orders (id, amount) VALUES ('o2', 12.0);\n"
    )


def test_a_script_runs_in_order_and_stops_at_its_first_error(
    sql_server: tuple[SqlServer, str], tmp_path: Path
) -> None:
    server, orders = sql_server
    script = tmp_path / "migrate.sql"
    script.write_text(f"-- the orders\n{_create(orders)}SHOW STREAMS;\n")
    ran = _strom("sql", "run", str(script), "--server", server.url)
    assert ran.returncode == 0, ran.stderr
    assert " Stream created " in ran.stdout.splitlines()
    assert any(line.startswith(" ORDERS      | " + orders) for line in ran.stdout.splitlines())

    bad = tmp_path / "bad.sql"
    bad.write_text(
        "SHOW TABLES;\n\nCREATE STREAM big AS\n  SELECT nope FROM orders;\n"
        "CREATE STREAM never (a INT) WITH (KAFKA_TOPIC='never', VALUE_FORMAT='JSON', "
        "PARTITIONS=1);\n"
    )
    failed = _strom("sql", "run", str(bad), "--server", server.url)
    assert failed.returncode == 1
    assert failed.stderr.splitlines() == [
        f"strom sql run: {bad} line 3: SELECT column 'NOPE' cannot be resolved."
    ]
    shown = httpx.post(f"{server.url}/ksql", json={"ksql": "SHOW STREAMS;"}).json()
    assert {s["name"] for s in shown[0]["streams"]} == {"ORDERS"}  # nothing after the error

    unreachable = _strom("sql", "run", str(script), "--server", "http://127.0.0.1:9")
    assert unreachable.returncode == 1
    assert unreachable.stderr.startswith("Error: cannot reach the server at http://127.0.0.1:9")


def test_the_shell_reads_statements_from_stdin(
    sql_server: tuple[SqlServer, str], tmp_path: Path
) -> None:
    server, orders = sql_server
    (tmp_path / "setup.sql").write_text(_create(orders))
    statements = (
        "RUN SCRIPT 'setup.sql';\n"
        "DESCRIBE orders;\n"
        "SELECT nope FROM orders EMIT CHANGES;\n"  # an error: the shell goes on
        f"PRINT '{orders}' FROM BEGINNING LIMIT 1;\n"
        "SET 'auto.offset.reset' = 'earliest';\n"
        "SELECT id, amount\n"
        "  FROM orders EMIT CHANGES LIMIT 2;\n"
        "UNSET 'auto.offset.reset';\n"
        "exit\n"
        "SHOW STREAMS;\n"  # after exit: not run
    )
    shell = _strom("sql", "shell", "--server", server.url, input=statements, cwd=tmp_path)
    assert shell.returncode == 0, shell.stderr
    lines = shell.stdout.splitlines()
    assert lines.count(" Stream created ") == 1
    assert "Name                 : ORDERS" in lines
    assert " ID     | STRING  (key) " in lines
    assert "SELECT column 'NOPE' cannot be resolved." in lines
    printed = lines.index("Key format: KAFKA_STRING")
    assert lines[printed + 1] == "Value format: JSON"
    assert lines[printed + 2].startswith("rowtime: ")
    assert lines[printed + 2].endswith(', key: o1, value: {"AMOUNT":3.5}, partition: 0')
    assert lines[printed + 3] == "Topic printing ceased"
    assert (
        "Successfully changed local property 'auto.offset.reset' to 'earliest'. "
        "Use the UNSET command to revert your change."
    ) in lines
    rows = lines.index("|ID                  |AMOUNT              |")
    assert sorted(lines[rows + 2 : rows + 4]) == [
        "|o1                  |3.5                 |",
        "|o2                  |12.0                |",
    ]
    assert lines[rows + 4 : rows + 6] == ["Limit Reached", "Query terminated"]
    assert (
        lines[-1] == "Successfully unset local property 'auto.offset.reset' (value was 'earliest')."
    )


class _Terminal:
    """`strom sql shell` on a pseudo-terminal, as a user at a keyboard runs it."""

    def __init__(self, url: str, home: Path) -> None:
        command = [sys.executable, "-m", "strom", "sql", "shell", "--server", url]
        env = {**os.environ, "HOME": str(home)}  # its history file there
        pid, self.fd = pty.fork()
        if pid == 0:  # the child: the shell, its stdin and stdout the terminal
            os.execve(sys.executable, command, env)
        self.pid = pid
        self.running = True
        self.seen = ""

    def type(self, keys: str) -> None:
        os.write(self.fd, keys.encode())

    def expect(self, text: str) -> str:
        """Read until `text` shows; what was read up to it, and forget it."""
        deadline = time.monotonic() + WAIT_S
        while text not in self.seen:
            left = deadline - time.monotonic()
            assert left > 0, f"no {text!r} within {WAIT_S}s; the terminal shows:\n{self.seen}"
            if select.select([self.fd], [], [], min(left, 1.0))[0]:
                try:
                    self.seen += os.read(self.fd, 65536).decode(errors="replace")
                except OSError:  # the shell ended
                    break
        assert text in self.seen, self.seen
        before, _, self.seen = self.seen.partition(text)
        return before

    def wait(self) -> int:
        """The shell's exit status, once it ends by itself."""
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            done, status = os.waitpid(self.pid, os.WNOHANG)
            if done:
                self.running = False
                return os.waitstatus_to_exitcode(status)
            time.sleep(0.1)
        raise AssertionError("the shell did not end")

    def close(self) -> None:
        if self.running:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        os.close(self.fd)


def test_the_shell_on_a_terminal_prompts_and_ctrl_c_ends_a_push_query(
    sql_server: tuple[SqlServer, str], tmp_path: Path
) -> None:
    server, orders = sql_server
    httpx.post(f"{server.url}/ksql", json={"ksql": _create(orders)}, timeout=60)
    terminal = _Terminal(server.url, tmp_path)
    try:
        terminal.expect("ksql> ")
        terminal.type("SHOW\r")
        terminal.expect("> ")  # the statement goes on: the continuation prompt
        terminal.type("  STREAMS;\r")
        listed = terminal.expect("ksql> ")
        assert " ORDERS      | " + orders in listed
        terminal.type("SET 'auto.offset.reset'='earliest';\r")
        terminal.expect("ksql> ")
        terminal.type("SELECT id FROM orders EMIT CHANGES;\r")
        terminal.expect("|o2 ")  # both rows came; the query keeps running
        assert len(server.engine.push_queries) == 1
        terminal.type("\x03")  # Ctrl-C
        terminal.expect("Query terminated")
        terminal.expect("ksql> ")
        deadline = time.monotonic() + WAIT_S
        while server.engine.push_queries:
            assert time.monotonic() < deadline, "the push query was not closed"
            time.sleep(0.2)
        terminal.type("exit\r")
        assert terminal.wait() == 0
        history = (tmp_path / ".strom_sql_history").read_text().splitlines()
        assert "SET 'auto.offset.reset'='earliest';" in history
    finally:
        terminal.close()


def test_https_and_basic_auth_as_ksqldb(
    spark: SparkSession, broker: StromServer, tmp_path: Path
) -> None:
    """ksqlDB's listener security: https from a PEM keystore, basic authentication from a JAAS
    file (401 and 403 with ksqlDB's error body, /healthcheck open), and the clients' `-u/-p`
    (the password asked for when only `-u` is given) and `--ca-location`."""
    ca = CertificateAuthority()
    keystore = ca.issue("sql", hosts=("127.0.0.1",)).write_keystore_pem(tmp_path / "sql.pem")
    ca_file = ca.write_pem(tmp_path / "ca.pem")
    passwords = tmp_path / "password.properties"
    passwords.write_text("alice: secret,admin\ncarol: secret,nobody\n")
    jaas = tmp_path / "jaas.conf"
    jaas.write_text(
        "KsqlServer-Props {\n  org.eclipse.jetty.jaas.spi.PropertyFileLoginModule required\n"
        f'  file="{passwords}";\n}};\n'
    )
    settings = SqlSettings.from_properties(
        {
            "bootstrap.servers": broker.bootstrap,
            "listeners": "https://127.0.0.1:0",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(keystore),
            "authentication.method": "BASIC",
            "authentication.roles": "admin",
            "java.security.auth.login.config": str(jaas),
            "ksql.service.id": unique_topic("sql-secure"),
            "ksql.internal.topic.replicas": "1",
            "ksql.streams.state.dir": str(tmp_path / "state"),
        },
        environ={},
    )
    server = SqlServer(settings, spark=lambda: spark)
    server.start()
    try:
        assert server.url.startswith("https://")
        trusted = ssl.create_default_context(cafile=ca_file)
        with httpx.Client(base_url=server.url, verify=trusted, timeout=30) as api:
            refused = api.get("/info")
            assert refused.status_code == 401
            assert refused.headers["www-authenticate"] == 'Basic realm="KsqlServer-Props"'
            assert refused.json() == {
                "@type": "generic_error",
                "error_code": 40100,
                "message": "Unauthorized",
            }
            assert api.get("/info", auth=("alice", "wrong")).status_code == 401
            forbidden = api.get("/info", auth=("carol", "secret"))
            assert (forbidden.status_code, forbidden.json()["error_code"]) == (403, 40300)
            assert api.get("/healthcheck").status_code == 200
            assert api.get("/info", auth=("alice", "secret")).status_code == 200

        script = tmp_path / "streams.sql"
        orders = unique_topic("sql-secure-orders")
        script.write_text(f"{_create(orders)}SHOW STREAMS;\n")
        secured = ("--server", server.url, "--ca-location", str(ca_file))
        ran = _strom("sql", "run", str(script), *secured, "-u", "alice", "-p", "secret")
        assert ran.returncode == 0, ran.stderr
        assert " Stream created " in ran.stdout.splitlines()
        anonymous = _strom("sql", "shell", *secured, input="SHOW STREAMS;\n")
        assert anonymous.returncode == 1
        assert anonymous.stderr.strip() == f"Error: the server at {server.url}: Unauthorized"
        asked = _strom("sql", "shell", *secured, "-u", "alice", input="secret\nSHOW STREAMS;\n")
        assert asked.returncode == 0, asked.stderr
        assert any(line.startswith(" ORDERS ") for line in asked.stdout.splitlines())
    finally:
        server.stop()
