"""``strom --help`` imports no subcommand, and a command whose extra is missing says which to
install in one line: each runs the real CLI in a fresh interpreter."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from strom.cli.main import SUBCOMMANDS, cli

TIMEOUT_S = float(os.environ.get("STROM_TEST_CLI_TIMEOUT_S", "60"))

BLOCKER = """
import importlib.abc, sys

BLOCKED = {blocked!r}


class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None


sys.meta_path.insert(0, Block())
"""
"""A sitecustomize making the modules of an extra unimportable, as if it were not installed."""


def run_strom(
    args: list[str], tmp_path: Path, *, blocked: tuple[str, ...] = (), code: str = ""
) -> subprocess.CompletedProcess[str]:
    """``strom ARGS`` (or python ``code``) in a fresh interpreter, run in ``tmp_path``."""
    paths = [str(Path(__file__).parents[3] / "src")]
    if blocked:
        (tmp_path / "sitecustomize.py").write_text(BLOCKER.format(blocked=set(blocked)))
        paths.insert(0, str(tmp_path))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    command = ["-c", code] if code else ["-m", "strom", *args]
    return subprocess.run(
        [sys.executable, *command],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=TIMEOUT_S,
        check=False,
    )


def test_help_imports_no_subcommand_server_kio_or_hypothesis(tmp_path: Path) -> None:
    code = (
        "import sys\nfrom strom.cli.main import main\ntry:\n    main()\nexcept SystemExit:\n"
        "    print(' '.join(sorted(sys.modules)))\n"
    )
    result = run_strom(
        [], tmp_path, code=code.replace("main()", "sys.argv[1:] = ['--help']; main()")
    )
    assert result.returncode == 0, result.stderr
    modules = set(result.stdout.splitlines()[-1].split())
    assert "click" in modules
    loaded = {m for m in modules if m.split(".")[0] in {"hypothesis", "kio", "httpx", "uvicorn"}}
    loaded |= {m for m in modules if m.startswith(("strom.server", "strom.cli."))} - {
        "strom.cli.main"
    }
    assert loaded == set()
    assert not (tmp_path / ".hypothesis").exists()


def test_help_lists_every_command_with_its_short_help(tmp_path: Path) -> None:
    result = run_strom(["--help"], tmp_path)
    assert result.returncode == 0, result.stderr
    for name, (_, text) in SUBCOMMANDS.items():
        assert f"  {name} " in result.stdout
        assert text in result.stdout


@pytest.mark.parametrize("name", list(SUBCOMMANDS))
def test_every_table_entry_names_its_command(name: str) -> None:
    command = cli.get_command(click.Context(cli), name)
    assert isinstance(command, click.Command)
    assert command.name == name


def test_server_loads_kio_without_hypothesis(tmp_path: Path) -> None:
    code = "import sys, strom.server.node; print('hypothesis' in sys.modules)"
    result = run_strom([], tmp_path, code=code)
    assert result.stdout.strip() == "False", result.stderr
    assert not (tmp_path / ".hypothesis").exists()


REGISTRY_MODULES = ("httpx", "httpx2", "uvicorn", "starlette")


@pytest.mark.parametrize("args", [["--help"], ["topics", "--help"], ["server", "--help"]])
def test_commands_without_the_registry_extra_work(tmp_path: Path, args: list[str]) -> None:
    result = run_strom(args, tmp_path, blocked=REGISTRY_MODULES)
    assert result.returncode == 0, result.stderr
    assert "Usage:" in result.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["registry", "--bootstrap-server", "127.0.0.1:1"],
        ["schemas", "list"],
        ["schemas", "--help"],
    ],
)
def test_a_missing_registry_extra_is_one_line(tmp_path: Path, args: list[str]) -> None:
    result = run_strom(args, tmp_path, blocked=REGISTRY_MODULES)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0, result.stderr
    assert "pip install 'strom[registry]'" in result.stderr


@pytest.mark.parametrize(
    ("args", "blocked"),
    [
        (["connect", "--bootstrap-server", "127.0.0.1:1"], ("pyspark", "pyarrow")),
        (["connectors", "list"], REGISTRY_MODULES),
    ],
)
def test_a_missing_connect_extra_is_one_line(
    tmp_path: Path, args: list[str], blocked: tuple[str, ...]
) -> None:
    """The Connect commands name their own extra, though their modules are in others' too."""
    result = run_strom(args, tmp_path, blocked=blocked)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0, result.stderr
    assert "pip install 'strom[connect]'" in result.stderr
