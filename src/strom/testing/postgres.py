"""A real PostgreSQL server for tests: Debian's ``postgresql`` binaries, a cluster made by
``initdb`` in a temporary directory, run by ``pg_ctl`` on a free port as the unprivileged
``postgres`` user (PostgreSQL refuses to run as root), its unix socket in that directory,
``wal_level=logical`` so change data capture can read its write-ahead log. Trust
authentication: the tests connect over TCP on 127.0.0.1 as the superuser ``postgres``.

``with Postgres.start() as pg: pg.url`` (a JDBC URL), ``pg.conninfo`` (libpq's)."""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Self

__all__ = ["Postgres", "PostgresUnavailable", "postgres_bin"]

SETTINGS = {
    "wal_level": "logical",
    "max_replication_slots": "10",
    "max_wal_senders": "10",
    "fsync": "off",  # a test cluster: its data does not outlive the run
    "listen_addresses": "'127.0.0.1'",
}


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL here (or no user to run it as); the message says what is missing."""


def postgres_bin() -> Path:
    """The directory of the newest installed PostgreSQL's programs (``STROM_PG_BIN`` first)."""
    if given := os.environ.get("STROM_PG_BIN"):
        return Path(given)
    found = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name)
    )
    if not found:
        initdb = shutil.which("initdb")
        if initdb is None:
            raise PostgresUnavailable("PostgreSQL is not installed (make tools installs it)")
        return Path(initdb).parent
    return found[-1].parent


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Postgres:
    """One running cluster."""

    directory: Path
    port: int
    bin: Path
    user: str | None
    """Who runs the server (``postgres`` when we are root), or None for ourselves."""
    database: str = "postgres"
    host: str = "127.0.0.1"

    @property
    def url(self) -> str:
        """The JDBC URL of the database (Confluent's JDBC connector's ``connection.url``)."""
        return f"jdbc:postgresql://{self.host}:{self.port}/{self.database}"

    @property
    def conninfo(self) -> str:
        return f"host={self.host} port={self.port} dbname={self.database} user=postgres"

    @classmethod
    def start(cls) -> Self:
        """initdb and start a cluster; ``PostgresUnavailable`` when that cannot be done here."""
        binaries = postgres_bin()
        user = None
        if os.geteuid() == 0:
            try:
                owner = pwd.getpwnam("postgres")
            except KeyError:
                raise PostgresUnavailable("no 'postgres' user to run PostgreSQL as") from None
            user = "postgres"
        directory = Path(tempfile.mkdtemp(prefix="strom-pg-"))
        if user is not None:
            os.chown(directory, owner.pw_uid, owner.pw_gid)
        server = cls(directory, _free_port(), binaries, user)
        data = directory / "data"
        server._run(
            "initdb", "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"
        )
        with (data / "postgresql.conf").open("a") as conf:
            conf.writelines(f"{key} = {value}\n" for key, value in SETTINGS.items())
            conf.write(f"unix_socket_directories = '{directory}'\nport = {server.port}\n")
        server._run("pg_ctl", "-D", str(data), "-l", str(directory / "log"), "-w", "start")
        return server

    def restart(self) -> None:
        """Stop the server as a crash would (``immediate``: its clients cut off, recovery from
        the write-ahead log at start) and start it again on the same port."""
        data = str(self.directory / "data")
        log = str(self.directory / "log")
        self._run("pg_ctl", "-D", data, "-l", log, "-m", "immediate", "-w", "restart")

    def stop(self) -> None:
        """Stop the server (fast shutdown) and remove its directory."""
        try:
            self._run("pg_ctl", "-D", str(self.directory / "data"), "-m", "fast", "-w", "stop")
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)

    def _run(self, program: str, *args: str) -> None:
        command = [str(self.bin / program), *args]
        if self.user is not None:
            command = ["runuser", "-u", self.user, "--", *command]
        done = subprocess.run(
            command, capture_output=True, text=True, cwd=self.directory, check=False, timeout=120
        )
        if done.returncode != 0:
            raise PostgresUnavailable(f"{program} failed: {done.stderr.strip() or done.stdout}")

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
