"""What every client-side ``strom`` command shares: connection options, settings, errors.

The client commands (``topics``, ``configs``, ``produce``, ``consume``) talk to brokers through
confluent-kafka (librdkafka). This module builds their librdkafka settings from
``--bootstrap-server`` and ``--command-config``, parses ``name=value`` options, checks that a
broker is reachable within a bounded time, and turns every failure into one ``Error: ...`` line
and a non-zero exit (``handle_errors``), never a traceback.

Precedence of client settings, lowest first: the defaults below and the command's own defaults
(``PRODUCER_DEFAULTS``, ...), ``--command-config``, the command's flags, ``--property`` where a
command has it; ``--bootstrap-server`` wins over a ``bootstrap.servers`` in the file when given.
"""

from __future__ import annotations

import functools
import logging
import os
import re
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, ParamSpec, Protocol, TypeVar

import click
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._metadata import ClusterMetadata
from rich.console import Console

from strom.config import ConfigError, parse_properties

__all__ = [
    "DEFAULT_BOOTSTRAP_SERVER",
    "GROUP_DENIED",
    "PIPED_WIDTH",
    "REQUEST_TIMEOUT_S",
    "CliError",
    "ClientCommand",
    "ClientConfig",
    "ClientErrors",
    "ClientGroup",
    "ToolGroup",
    "client_options",
    "connect_admin",
    "error_code",
    "error_of",
    "exception_message",
    "failure",
    "fetch_metadata",
    "group_denied",
    "handle_errors",
    "kafka_error_message",
    "load_command_config",
    "output_console",
    "parse_assignment",
    "parse_assignments",
    "property_option",
    "topic_partitions",
    "wait_for_partitions",
]

DEFAULT_BOOTSTRAP_SERVER = "localhost:9092"

CONNECT_TIMEOUT_MS = 10_000
"""``socket.connection.setup.timeout.ms`` unless the command config sets it (librdkafka: 30 s)."""

REQUEST_TIMEOUT_S = 30.0
"""Admin requests: how long librdkafka may take for one, broker lookup included."""

_PROBE_MARGIN_S = 2.0
_FIRST_PROBE_S = 0.25
_PARTITIONS_RETRY_S = 0.2

_DEFAULTS: Mapping[str, str] = {
    "client.id": "strom-cli",
    "socket.connection.setup.timeout.ms": str(CONNECT_TIMEOUT_MS),
}

_UNREACHABLE_CODES = frozenset({KafkaError._TRANSPORT, KafkaError._TIMED_OUT})

P = ParamSpec("P")
R = TypeVar("R")
F = TypeVar("F", bound=Callable[..., Any])
C = TypeVar("C")


class CliError(click.ClickException):
    """A failure reported as one ``Error: <message>`` line on stderr, exit status 1."""


class _UsageLine(click.UsageError):
    """A usage error shown as its one ``Error:`` line, without the usage and the hint."""

    def show(self, file: IO[Any] | None = None) -> None:
        click.echo(f"Error: {self.format_message()}", file=file, err=True)


def _one_line(error: click.UsageError) -> _UsageLine:
    # click spreads some messages over lines (the choices of a missing option)
    return _UsageLine(" ".join(error.format_message().split()), error.ctx)


_CONNECTION = "strom.connection"
"""``ctx.meta`` key: the connection options a ``ToolGroup`` was given before its verb."""

_CONNECTION_PARAMS = ("bootstrap_server", "command_config", "bootstrap_controller")


class ClientCommand(click.Command):
    """A command whose usage errors (a bad option value, a missing argument) are one line;
    they keep click's exit status 2, other failures exit with 1. Connection options it is not
    given are those given before its verb (``ToolGroup``)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # Those before the verb go first: one given again after it wins (click keeps the last).
        before: list[str] = []
        options = {param.name: param for param in self.params if isinstance(param, click.Option)}
        for name, value in ctx.meta.get(_CONNECTION, {}).items():
            if name not in options:
                option = "--" + name.replace("_", "-")
                raise _UsageLine(f"{ctx.command_path} does not take {option}", ctx)
            before += [options[name].opts[0], str(value)]
        try:
            return super().parse_args(ctx, [*before, *args])
        except click.UsageError as error:
            raise _one_line(error) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as error:
            raise _one_line(error) from None


class ClientGroup(click.Group):
    """A group of ``ClientCommand``s; an unknown subcommand is a one-line error too."""

    command_class = ClientCommand

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as error:
            raise _one_line(error) from None


class ToolGroup(ClientGroup):
    """The verbs of a Kafka tool: ``--bootstrap-server`` and ``--command-config`` (and
    ``--bootstrap-controller`` where the group has it) go before the verb, as in
    ``kafka-metadata-quorum.sh --bootstrap-server X describe``, or after it (which wins)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        client_options(self)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            rest = super().parse_args(ctx, args)
        except click.UsageError as error:
            raise _one_line(error) from None
        given = {name: ctx.params.pop(name) for name in _CONNECTION_PARAMS if name in ctx.params}
        before = ctx.meta.setdefault(_CONNECTION, {})
        before.update({name: value for name, value in given.items() if value is not None})
        return rest


def kafka_error_message(error: KafkaError) -> str:
    """One line for a librdkafka error: ``NAME: reason`` for a broker's error, the reason alone
    for a local one (librdkafka's names of local errors start with ``_``)."""
    reason = error.str()
    name = error.name()
    if name.startswith("_") or not name:
        return reason
    return f"{name}: {reason}"


def error_of(exc: KafkaException) -> KafkaError | None:
    """The KafkaError a KafkaException carries (librdkafka always gives one)."""
    first = exc.args[0] if exc.args else None
    return first if isinstance(first, KafkaError) else None


def error_code(exc: KafkaException) -> int | None:
    error = error_of(exc)
    return None if error is None else error.code()


GROUP_DENIED = "GROUP_AUTHORIZATION_FAILED"


def group_denied(message: str, group: str, operation: str, settings: Mapping[str, Any]) -> str:
    """A ``GROUP_AUTHORIZATION_FAILED`` message with the group, the client's principal (as its
    settings tell it) and the ``strom acls add`` that would allow it."""
    user = settings.get("sasl.username")
    if user:
        principal = f"User:{user}"
    elif str(settings.get("security.protocol", "")).upper() in ("SSL", "SASL_SSL"):
        principal = "User:<your certificate's subject>"
    else:
        principal = "User:ANONYMOUS"
    return (
        f"{message}: {principal} may not {operation.lower()} group {group!r}; an admin can "
        f"allow it with: strom acls add --allow-principal {principal} --operation {operation} "
        f"--group {group}"
    )


def exception_message(exc: KafkaException) -> str:
    """One line for a KafkaException (see ``kafka_error_message``)."""
    error = error_of(exc)
    return str(exc) if error is None else kafka_error_message(error)


def failure(action: str, exc: KafkaException) -> CliError:
    """``CliError("<action>: <error>")``: ``cannot create topic 'a': TOPIC_ALREADY_EXISTS: ...``."""
    return CliError(f"{action}: {exception_message(exc)}")


def handle_errors(func: Callable[P, R]) -> Callable[P, R]:
    """Decorate a command callback so that failures end in one ``Error:`` line, not a traceback."""

    @functools.wraps(func)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return func(*args, **kwargs)
        except KafkaException as exc:
            raise CliError(exception_message(exc)) from None
        except KeyboardInterrupt:
            sys.exit(130)
        except BrokenPipeError:
            # The reader of our output went away (``| head``): a normal end, and a quiet one.
            _silence_stdout()
            sys.exit(0)

    return wrapper


def _silence_stdout() -> None:
    """After a broken pipe, keep the interpreter's final flush of stdout from failing again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no real file descriptor (a test runner's buffer)
        pass


def parse_assignment(text: str, *, option: str) -> tuple[str, str]:
    """Split ``name=value`` (the value may contain ``=`` and may be empty)."""
    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise click.BadParameter(f"expected NAME=VALUE, got {text!r}", param_hint=option)
    return name, value


def parse_assignments(values: Iterable[str], *, option: str) -> dict[str, str]:
    """Parse repeated ``name=value`` options into a dict; a later name wins."""
    return dict(parse_assignment(value, option=option) for value in values)


@dataclass
class ClientErrors:
    """The errors librdkafka reports through ``error_cb`` (served by ``poll``)."""

    last: KafkaError | None = None
    all_brokers_down: bool = False
    fatal: KafkaError | None = None

    def __call__(self, error: KafkaError) -> None:
        if error.code() == KafkaError._ALL_BROKERS_DOWN:
            self.all_brokers_down = True
        else:
            self.last = error
        if error.fatal() and self.fatal is None:
            self.fatal = error

    def raise_if_fatal(self) -> None:
        if self.fatal is not None:
            raise CliError(kafka_error_message(self.fatal))


@dataclass
class ClientConfig:
    """librdkafka settings of one command, and the error collector their callbacks feed."""

    settings: dict[str, Any]
    errors: ClientErrors

    @classmethod
    def build(
        cls,
        *,
        bootstrap_server: str | None,
        command_config: Path | None,
        defaults: Mapping[str, str] | None = None,
        overrides: Mapping[str, str] | None = None,
    ) -> ClientConfig:
        """Merge, lowest first: the common defaults, the command's ``defaults``,
        ``--command-config``, the command's ``overrides``, ``--bootstrap-server``."""
        settings: dict[str, Any] = dict(_DEFAULTS)
        settings["bootstrap.servers"] = DEFAULT_BOOTSTRAP_SERVER
        settings.update(defaults or {})
        if command_config is not None:
            settings.update(load_command_config(command_config))
        settings.update(overrides or {})
        if bootstrap_server is not None:
            settings["bootstrap.servers"] = bootstrap_server
        errors = ClientErrors()
        settings["error_cb"] = errors
        if "debug" not in settings:
            # librdkafka logs connection failures to stderr itself; the commands report them
            # once, as one line. With ``debug`` set, its log is what the user asked for.
            settings["logger"] = _quiet_logger()
        return cls(settings=settings, errors=errors)

    def create(self, kind: Callable[[dict[str, Any]], C]) -> C:
        """The librdkafka client (``Producer``, ``Consumer``, ``AdminClient``) of these settings.

        librdkafka names the setting it stores a value under, which for an alias is not the
        one the user typed (``linger.ms`` is stored as ``queue.buffering.max.ms``): a refused
        value is reported under the name it was given, found by trying each setting alone.
        """
        try:
            return kind(self.settings)
        except KafkaException:
            refusal = self._refusal(kind)
            if refusal is None:
                raise
            raise CliError(refusal) from None

    def _refusal(self, kind: Callable[[dict[str, Any]], object]) -> str | None:
        """What is wrong with the first setting librdkafka refuses on its own, by its name."""
        base = {"group.id": "strom-config-check"} if "group.id" in self.settings else {}
        for name, value in self.settings.items():
            if callable(value) or isinstance(value, logging.Logger):
                continue
            try:
                kind({**base, name: value, "logger": _quiet_logger()})
            except KafkaException as exc:
                if "No such configuration property" in exception_message(exc):
                    return f"unknown setting {name}"
                return f"invalid value {value!r} for {name}"
        return None

    @property
    def bootstrap_servers(self) -> str:
        return str(self.settings["bootstrap.servers"])

    @property
    def connect_timeout_s(self) -> float:
        raw = self.settings.get("socket.connection.setup.timeout.ms", CONNECT_TIMEOUT_MS)
        try:
            return max(int(raw), 1) / 1000
        except (TypeError, ValueError):
            return CONNECT_TIMEOUT_MS / 1000


def load_command_config(path: Path) -> dict[str, str]:
    """The settings of a ``--command-config`` properties file (``CliError`` naming the file)."""
    try:
        return parse_properties(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise CliError(f"cannot read {path}: {error.strerror or error}") from None
    except UnicodeDecodeError:
        raise CliError(f"{path}: not UTF-8 text") from None
    except ConfigError as error:
        raise CliError(f"{path}: {error}") from None


def _quiet_logger() -> logging.Logger:
    logger = logging.getLogger("strom.cli.librdkafka")
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
    logger.propagate = False
    return logger


class MetadataClient(Protocol):
    """What ``fetch_metadata`` needs: AdminClient, Producer and Consumer all have it."""

    def list_topics(self, topic: str | None = ..., timeout: float = ...) -> Any: ...

    def poll(self, timeout: float = ...) -> object: ...


def fetch_metadata(
    client: MetadataClient, config: ClientConfig, topic: str | None = None
) -> ClusterMetadata:
    """Cluster metadata (of one topic or all), or ``CliError`` when no broker can be reached.

    Fails as soon as librdkafka reports every bootstrap broker down (a refused connection, an
    unknown host), and otherwise after the connection set-up timeout: never hangs.
    """
    deadline = time.monotonic() + config.connect_timeout_s + _PROBE_MARGIN_S
    attempt_s = _FIRST_PROBE_S
    while True:
        remaining = deadline - time.monotonic()
        try:
            metadata: ClusterMetadata = client.list_topics(
                topic, timeout=max(min(attempt_s, remaining), 0.01)
            )
        except KafkaException as exc:
            if error_code(exc) not in _UNREACHABLE_CODES:
                raise
        else:
            return metadata
        client.poll(0)  # serves error_cb
        config.errors.raise_if_fatal()
        if config.errors.all_brokers_down or time.monotonic() >= deadline:
            raise CliError(_unreachable_message(config))
        attempt_s *= 2


_NOT_TLS = ("SSL connection closed by peer", "PLAINTEXT broker listener", "wrong version number")
"""What librdkafka says when a TLS handshake meets a listener that does not speak TLS."""
_BROKER_PREFIX = re.compile(r"^\S+/(?:bootstrap|\d+): ")
_STATE_SUFFIX = re.compile(r" \(after \d+ms in state \w+\)$")


def _unreachable_message(config: ClientConfig) -> str:
    servers = config.bootstrap_servers
    if config.errors.last is None:
        waited = config.connect_timeout_s + _PROBE_MARGIN_S
        return f"no broker at {servers} answered within {waited:g} s; is the server running?"
    last = config.errors.last
    detail = _STATE_SUFFIX.sub("", _BROKER_PREFIX.sub("", last.str()))
    protocol = str(config.settings.get("security.protocol", "plaintext")).upper()
    if any(sign in detail for sign in _NOT_TLS):
        return (
            f"the listener at {servers} speaks another protocol than security.protocol="
            f"{protocol} (no TLS server answered the handshake): set security.protocol to the "
            "listener's in --command-config"
        )
    if last.code() == KafkaError._AUTHENTICATION:
        return (
            f"the broker at {servers} did not authenticate this client with "
            f"security.protocol={protocol} ({detail}): check security.protocol and the sasl.* "
            "settings in --command-config"
        )
    return f"cannot reach a broker at {servers}: {detail}; is the server running?"


def bootstrap_server_option(help_text: str = "Broker(s) to connect to.") -> Callable[[F], F]:
    """``--bootstrap-server`` of the commands that speak to the cluster with strom's own client
    (default ``localhost:9092``, shown in ``--help``)."""
    return click.option(
        "--bootstrap-server",
        default=DEFAULT_BOOTSTRAP_SERVER,
        show_default=True,
        metavar="HOST:PORT[,...]",
        help=help_text,
    )


def client_options(func: F) -> F:
    """Add ``--bootstrap-server`` and ``--command-config`` to a client command."""
    func = click.option(
        "--command-config",
        type=click.Path(exists=True, dir_okay=False, path_type=Path),
        default=None,
        metavar="FILE",
        help="Properties file of client (librdkafka) settings, e.g. security.protocol.",
    )(func)
    return click.option(
        "--bootstrap-server",
        default=None,
        metavar="HOST:PORT[,HOST:PORT...]",
        help=f"Broker(s) to connect to.  [default: {DEFAULT_BOOTSTRAP_SERVER}]",
    )(func)


PIPED_WIDTH = 100
"""Columns of wrapped text written to a pipe or a file (``$COLUMNS`` when set)."""


def output_console(*, wrap: bool = False) -> Console:
    """A rich console for command output: no markup (values may hold brackets). Written to a
    pipe or a file, table cells do not wrap into the next line (one line per row, for tools);
    with ``wrap`` (prose cells) they wrap at ``$COLUMNS``, else ``PIPED_WIDTH``."""
    width = None
    if not sys.stdout.isatty():
        width = int(os.environ.get("COLUMNS") or PIPED_WIDTH) if wrap else 4096
    return Console(markup=False, highlight=False, emoji=False, width=width, soft_wrap=False)


def connect_admin(
    *, bootstrap_server: str | None, command_config: Path | None
) -> tuple[AdminClient, ClusterMetadata]:
    """An AdminClient and the cluster's metadata, its broker having answered (else ``CliError``)."""
    config = ClientConfig.build(bootstrap_server=bootstrap_server, command_config=command_config)
    admin = config.create(AdminClient)
    return admin, fetch_metadata(admin, config)


def topic_partitions(metadata: ClusterMetadata, topic: str) -> list[int]:
    """The partition ids of ``topic`` in ``metadata`` (empty while its leaders are being
    elected), or ``CliError`` when the topic does not exist or cannot be used."""
    found = metadata.topics.get(topic)
    error = None if found is None else found.error
    if found is None or (error is not None and error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART):
        raise CliError(f"topic {topic!r} does not exist")
    if error is not None and error.code() != KafkaError.LEADER_NOT_AVAILABLE:
        raise CliError(f"topic {topic!r}: {kafka_error_message(error)}")
    return sorted(found.partitions)


def wait_for_partitions(client: MetadataClient, config: ClientConfig, topic: str) -> list[int]:
    """The partition ids of ``topic``, waiting up to the connection timeout while a topic just
    created (or auto-created by this very request) has none yet; ``CliError`` if it is missing."""
    deadline = time.monotonic() + config.connect_timeout_s
    while True:
        partitions = topic_partitions(fetch_metadata(client, config, topic), topic)
        if partitions or time.monotonic() >= deadline:
            return partitions
        time.sleep(_PARTITIONS_RETRY_S)


def property_option(client: str) -> Callable[[F], F]:
    """``--property NAME=VALUE`` (repeatable): any librdkafka setting of the ``client``."""
    return click.option(
        "--property",
        "properties",
        multiple=True,
        metavar="NAME=VALUE",
        help=f"Any librdkafka {client} setting, e.g. client.id=me; wins over the other options."
        " Repeatable.",
    )
