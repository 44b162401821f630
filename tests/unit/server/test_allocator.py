from __future__ import annotations

import platform
import subprocess
import sys

import pytest

_WHERE_A_LARGE_BUFFER_GOES = """
import ctypes, sys
if sys.argv[1] == "tuned":
    from strom.server.allocator import keep_large_buffers_in_heap
    assert keep_large_buffers_in_heap()
buffer = bytearray(1024 * 1024)
address = ctypes.addressof((ctypes.c_char * len(buffer)).from_buffer(buffer))
for line in open("/proc/self/maps"):
    fields = line.split()
    start, end = (int(bound, 16) for bound in fields[0].split("-"))
    if start <= address < end:
        print(fields[5] if len(fields) > 5 else "anonymous")
"""


def _region_of_a_large_buffer(mode: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", _WHERE_A_LARGE_BUFFER_GOES, mode],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return result.stdout.strip()


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc settings")
def test_large_buffers_come_from_the_heap_not_a_mapping_of_their_own() -> None:
    """A produce request's 1 MB buffer reuses the heap's pages once the thresholds are set;
    with glibc's defaults it gets a fresh mapping (page faults on every 4 KB of it)."""
    assert _region_of_a_large_buffer("default") == "anonymous"
    assert _region_of_a_large_buffer("tuned") == "[heap]"
