"""``strom.common.dir_lock``: one owner per directory, the holder's PID in the refusal."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from strom.common.dir_lock import DirectoryInUseError, DirectoryLock


def test_a_second_owner_is_refused_until_the_first_releases(tmp_path: Path) -> None:
    directory = tmp_path / "state"
    lock = DirectoryLock.acquire(directory, what="state directory")
    assert (directory / ".lock").read_text() == f"{os.getpid()}\n"
    with pytest.raises(DirectoryInUseError) as refused:
        DirectoryLock.acquire(directory, what="state directory")
    assert str(refused.value) == (
        f"state directory {directory} is in use by process {os.getpid()} "
        f"(it holds {directory}/.lock): stop that process, or give this one another directory"
    )
    lock.release()
    lock.release()  # idempotent
    assert not lock.held
    DirectoryLock.acquire(directory).release()


def test_another_process_is_refused_and_named(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, pathlib\n"
            "from strom.common.dir_lock import DirectoryLock\n"
            f"DirectoryLock.acquire(pathlib.Path({str(tmp_path)!r}))\n"
            "print('held', flush=True)\n"
            "sys.stdin.read()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(DirectoryInUseError, match=f"in use by process {holder.pid} "):
            DirectoryLock.acquire(tmp_path)
    finally:
        holder.kill()
        holder.wait(10)
    DirectoryLock.acquire(tmp_path).release()  # the kernel dropped the dead holder's lock
