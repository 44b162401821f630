"""The C allocator's settings for a long-running ``strom server`` process (glibc only).

A produce request of a few hundred KB makes buffers of its size: the frame it is received
into and the partition log's copy whose headers get their offsets. glibc's ``malloc`` serves
blocks from 128 KB on (a threshold it raises by itself only after some are freed, and not
for good) with a fresh ``mmap`` each, and gives the memory back on ``free``: every such
buffer then costs a page fault and a zeroed page per 4 KB before a byte is copied into it,
as much CPU again as the copy (a 300 KB frame received and copied: 314 us against 50 us from
pages already mapped, docs/benchmarks.md, "Issue 26, produce round").

``keep_large_buffers_in_heap`` raises the ``mmap`` threshold to its maximum (32 MB on 64-bit)
and keeps up to ``TRIM_THRESHOLD`` of free memory at the top of the heap instead of handing
it back, so those buffers reuse pages the process already has. The cost is memory held
after a burst of large requests (at most ``TRIM_THRESHOLD`` at the heap's top; freed blocks
below it are reused as before).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform
from typing import Final

__all__ = ["MMAP_THRESHOLD", "TRIM_THRESHOLD", "keep_large_buffers_in_heap"]

MMAP_THRESHOLD: Final = 32 * 1024 * 1024
"""Blocks from this size on get their own mapping (glibc's largest allowed value)."""
TRIM_THRESHOLD: Final = 64 * 1024 * 1024
"""Free memory at the top of the heap kept for reuse rather than given back."""
_M_TRIM_THRESHOLD: Final = -1
_M_MMAP_THRESHOLD: Final = -3


def keep_large_buffers_in_heap() -> bool:
    """Set glibc's thresholds (see the module doc); False where the C library is not glibc."""
    if platform.libc_ver()[0] != "glibc":
        return False
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    return bool(
        libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)
        and libc.mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)
    )
