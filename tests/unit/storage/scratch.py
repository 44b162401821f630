"""Scratch directories for the storage model tests.

The state-machine tests open, roll, fsync and delete hundreds of logs per run. They check the
log's logic, not the disk's durability, so they work on tmpfs where the machine has one: there
fsync costs nothing, and a run does not slow to minutes when other tests keep the disk busy.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

_TMPFS = Path("/dev/shm")


def scratch_directory(prefix: str) -> Path:
    """A new empty directory, on tmpfs when one is writable."""
    parent = _TMPFS if _TMPFS.is_dir() and os.access(_TMPFS, os.W_OK) else None
    return Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
