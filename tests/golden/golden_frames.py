"""The golden frames on disk (``frames/``), as written by ``capture.py``."""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from pathlib import Path

FRAMES_DIR = Path(__file__).resolve().parent / "frames"
CLIENTS = ("confluent-kafka", "kafka-python", "aiokafka")
_NAME = re.compile("(?P<client>" + "|".join(CLIENTS) + r")-(?P<api>[a-z-]+)-v(?P<version>\d+)\.hex")


@dataclass(frozen=True)
class GoldenFrame:
    path: Path
    client: str
    api: str
    """The API's name as in the file name: ``offset-commit``."""
    version: int
    request: bytes
    response: bytes | None

    @property
    def api_key_and_version(self) -> tuple[int, int]:
        api_key, version = struct.unpack_from(">hh", self.request)
        return api_key, version

    @classmethod
    def load(cls, path: Path) -> GoldenFrame:
        match = _NAME.fullmatch(path.name)
        assert match is not None, f"{path.name} is not <client>-<api>-v<version>.hex"
        request, response = path.read_text(encoding="ascii").split()
        return cls(
            path,
            match["client"],
            match["api"],
            int(match["version"]),
            bytes.fromhex(request),
            None if response == "-" else bytes.fromhex(response),
        )


def golden_frames(client: str | None = None) -> list[GoldenFrame]:
    frames = [GoldenFrame.load(path) for path in sorted(FRAMES_DIR.glob("*.hex"))]
    return [frame for frame in frames if client in (None, frame.client)]
