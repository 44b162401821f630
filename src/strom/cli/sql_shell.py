"""``strom sql shell`` and ``strom sql run``: clients of a SQL server's REST API (``strom sql``,
or ksqlDB's), as ksqlDB's CLI: statements to ``/ksql``, queries to ``/query-stream`` with their
rows printed as they arrive, ``SET``/``UNSET`` kept by the client and sent with every
statement, ``RUN SCRIPT`` read by the client."""

from __future__ import annotations

import atexit
import functools
import json
import sys
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any

import click

from strom.sql import display
from strom.sql.script import Local, Piece, Query, classify, split, statements

__all__ = ["run", "shell"]

DEFAULT_SERVER = "http://localhost:8088"
HISTORY = Path("~/.strom_sql_history")
HELP = """Statements end with ';' and may span lines. The client's own:
  SET 'property' = 'value';   a property sent with every statement and query after it
  UNSET 'property';
  RUN SCRIPT 'file.sql';      every statement of the file, stopping at the first error
A query (SELECT) prints its rows as they arrive, PRINT 'topic' [FROM BEGINNING] the
topic's records: Ctrl-C ends it (or its LIMIT).
exit, quit or Ctrl-D leave the shell."""


class Failed(Exception):
    """A statement the server (or the client) refused: its message."""


class Session:
    """A connection to one server and the client's properties (``SET``)."""

    def __init__(
        self,
        server: str,
        timeout: float,
        *,
        login: tuple[str, str] | None = None,
        ca_location: Path | None = None,
    ) -> None:
        """`login`: HTTP basic credentials; `ca_location`: the CA certificates (PEM) that sign
        an https server's certificate (else the system's)."""
        import ssl  # noqa: PLC0415

        import httpx  # noqa: PLC0415

        self.server = server.rstrip("/")
        self.properties: dict[str, str] = {}
        self._http = httpx.Client(
            base_url=self.server,
            timeout=httpx.Timeout(timeout, read=None),
            auth=login,
            verify=ssl.create_default_context(cafile=ca_location) if ca_location else True,
        )
        self._errors = httpx.HTTPError

    def check(self) -> None:
        """Fail in one line when the server does not answer, or refuses the client (401)."""
        try:
            self._call("GET", "/info")
        except Failed as error:
            raise click.ClickException(f"the server at {self.server}: {error}") from None

    def close(self) -> None:
        self._http.close()

    def execute(self, piece: Piece) -> None:
        """Run one statement and print what it answers; `Failed` with the message if refused."""
        what = classify(piece.text)
        if isinstance(what, Local):
            self._local(what)
        elif isinstance(what, Query):
            self._query(what)
        else:
            body = {"ksql": what, "streamsProperties": self.properties}
            for entity in self._call("POST", "/ksql", body):
                _print(display.entity(entity))

    def _local(self, command: Local) -> None:
        if command.command == "RUN SCRIPT":
            try:
                text = Path(command.name).expanduser().read_text(encoding="utf-8")
            except OSError as error:
                raise Failed(f"Cannot read {command.name}: {error.strerror}") from None
            for piece in statements(text):
                self.execute(piece)
        elif command.value is None:
            old = self.properties.pop(command.name, None)
            click.echo(f"Successfully unset local property '{command.name}' (value was '{old}').")
        else:
            self.properties[command.name] = command.value
            click.echo(
                f"Successfully changed local property '{command.name}' to '{command.value}'. "
                "Use the UNSET command to revert your change."
            )

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        try:
            answer = self._http.request(method, path, json=body)
        except self._errors as error:
            raise click.ClickException(
                f"cannot reach the server at {self.server}: {error}"
            ) from None
        if answer.status_code >= 400:
            raise Failed(_message(answer.content, answer.status_code))
        return answer.json()

    def _query(self, query: Query) -> None:
        body = {"sql": query.text, "properties": self.properties}
        query_id = None
        try:
            with self._http.stream("POST", "/query-stream", json=body) as answer:
                if answer.status_code >= 400:
                    raise Failed(_message(answer.read(), answer.status_code))
                lines = answer.iter_lines()
                if answer.headers.get("content-type", "").startswith("text/plain"):
                    for line in lines:  # PRINT's records, as the server wrote them
                        click.echo(line)
                    click.echo("Topic printing ceased")
                    return
                header = json.loads(next(lines))
                query_id, names = header["queryId"], header["columnNames"]
                _print(display.query_header(names))
                for line in lines:
                    if line.strip():
                        click.echo(display.query_row(names, json.loads(line)))
            if query.push and query.limit is not None:
                click.echo("Limit Reached")
        except KeyboardInterrupt:
            if query_id is not None:  # the stream is closed: the server ends the query too
                with suppress(self._errors):
                    self._http.post("/close-query", json={"queryId": query_id})
        except self._errors as error:
            raise click.ClickException(
                f"cannot reach the server at {self.server}: {error}"
            ) from None
        click.echo("Query terminated")


def _message(content: bytes, status: int) -> str:
    try:
        return str(json.loads(content)["message"])
    except (ValueError, KeyError, TypeError):
        return content.decode(errors="replace").strip() or f"HTTP {status}"


def _print(lines: list[str]) -> None:
    click.echo("\n".join(lines))


server_option = click.option(
    "--server",
    default=DEFAULT_SERVER,
    show_default=True,
    envvar="STROM_SQL_SERVER",
    help="The SQL server's REST API (or $STROM_SQL_SERVER).",
)
timeout_option = click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=60.0,
    show_default=True,
    help="Seconds to wait for the server to answer a statement.",
)
property_option = click.option(
    "--define",
    "-d",
    "defines",
    metavar="NAME=VALUE",
    multiple=True,
    help="A property, as SET would set it; repeatable.",
)


user_option = click.option(
    "--user", "-u", metavar="NAME", default=None, help="The user of an HTTP basic login."
)
password_option = click.option(
    "--password",
    "-p",
    metavar="PASSWORD",
    default=None,
    help="The user's password (asked for when --user is given without it).",
)
ca_option = click.option(
    "--ca-location",
    metavar="PEM",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="The CA certificates that sign an https server's certificate.",
)


def _connection(func: Callable[..., None]) -> Callable[..., None]:
    """The command with the options every client takes (the server, how to reach it, and
    properties), called with the `session` they make instead."""

    @functools.wraps(func)
    def command(
        *,
        server: str,
        timeout: float,
        defines: tuple[str, ...],
        user: str | None,
        password: str | None,
        ca_location: Path | None,
        **rest: Any,
    ) -> None:
        from strom.cli.service import pairs  # noqa: PLC0415

        if user is not None and password is None:  # as ksqlDB's CLI: asked, not echoed
            password = click.prompt("Enter password", hide_input=True, err=True)
        login = (user, password or "") if user is not None else None
        session = Session(server, timeout, login=login, ca_location=ca_location)
        session.properties.update(pairs(defines, "--define"))
        session.check()
        func(session=session, **rest)

    for option in (property_option, ca_option, password_option, user_option, timeout_option):
        command = option(command)
    return server_option(command)


@click.command("shell", short_help="An interactive prompt, as ksqlDB's CLI.")
@_connection
def shell(session: Session) -> None:
    """An interactive prompt on a SQL server, as ksqlDB's CLI: statements end with ';' and
    may span lines; `help` says more. Reads stdin (without prompts) when it is not a
    terminal."""
    interactive = sys.stdin.isatty()
    if interactive:
        _history()
        click.echo(f"strom sql shell, server {session.server}: `help` for help, `exit` to leave.")
    buffer = ""
    while True:
        try:
            line = _read(("ksql> " if not buffer.strip() else "> ") if interactive else None)
        except KeyboardInterrupt:
            buffer = ""  # Ctrl-C drops the statement being written, as ksqlDB's CLI
            click.echo()
            continue
        if line is None:
            break
        word = line.strip().lower()
        if not buffer.strip() and word in ("exit", "quit", "help"):
            if word != "help":
                break
            click.echo(HELP)
            continue
        pieces, buffer = split(buffer + line + "\n")
        for piece in pieces:
            try:
                session.execute(piece)
            except Failed as error:
                click.echo(str(error))
            except KeyboardInterrupt:  # the statement may still run on the server
                click.echo("\nInterrupted: the server may still run the statement.")
                break
    session.close()


def _read(prompt: str | None) -> str | None:
    """A line of stdin (with readline's editing and history behind a prompt); None at its
    end."""
    if prompt is None:
        line = sys.stdin.readline()
        return line.rstrip("\n") if line else None
    try:
        return input(prompt)
    except EOFError:
        click.echo()
        return None


def _history() -> None:
    """Line editing, and the history of earlier sessions (kept when this one ends)."""
    try:
        import readline  # noqa: PLC0415
    except ImportError:  # no readline on this platform: plain input
        return
    path = HISTORY.expanduser()
    with suppress(OSError):
        readline.read_history_file(path)
    readline.set_history_length(1000)
    atexit.register(readline.write_history_file, path)


@click.command("run", short_help="Run a file of statements (CI, migrations).")
@click.argument("script", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@_connection
def run(script: Path, session: Session) -> None:
    """Run the statements of SCRIPT on a SQL server, in order (CI, migrations): stops at the
    first error, naming its line, with exit status 1."""
    for piece in statements(script.read_text(encoding="utf-8")):
        try:
            session.execute(piece)
        except Failed as error:
            message = " ".join(str(error).split())
            click.echo(f"strom sql run: {script} line {piece.line}: {message}", err=True)
            sys.exit(1)
    session.close()
