"""Record what real Kafka clients send to strom, and what strom answers, as golden frames.

Run from the repository root::

    .venv/bin/python tests/golden/capture.py [client ...]

For each client it starts a fresh ``strom server``, runs the client's flow (``flows.py``) through
a recording proxy and keeps, for every API version the client used, the last request that was
answered (or the last one, if none was) and its response, as
``tests/golden/frames/<client>-<api>-v<version>.hex``: two lines of hex, the request and the
response without their size prefixes (``-`` when the broker sent no answer). A client's old files
are replaced, so re-run it after upgrading a client.
"""

from __future__ import annotations

import sys
from pathlib import Path

from flows import FLOWS, Names, record_flow

from strom.protocol.api import api_name

FRAMES_DIR = Path(__file__).resolve().parent / "frames"
NAME_LENGTH = 60
"""Long enough that a name's length prefix needs care, short enough to read in a hex dump."""


def golden_name(client: str, api_key: int, api_version: int) -> str:
    api = "".join("-" + c.lower() if c.isupper() else c for c in api_name(api_key)).lstrip("-")
    return f"{client}-{api}-v{api_version}.hex"


def main() -> int:
    FRAMES_DIR.mkdir(exist_ok=True)
    for client in sys.argv[1:] or FLOWS:
        frames: dict[str, str] = {}
        for exchange in record_flow(client, Names.of_length(client, NAME_LENGTH)):
            name = golden_name(client, exchange.api_key, exchange.api_version)
            if exchange.response is not None:
                frames[name] = f"{exchange.request.hex()}\n{exchange.response.hex()}\n"
            elif name not in frames or frames[name].endswith("-\n"):
                frames[name] = f"{exchange.request.hex()}\n-\n"
        for old in FRAMES_DIR.glob(f"{client}-*.hex"):
            old.unlink()
        for name, text in sorted(frames.items()):
            (FRAMES_DIR / name).write_text(text, encoding="ascii")
        print(f"{client}: {len(frames)} API versions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
