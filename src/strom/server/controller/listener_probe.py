"""Is a broker's process still there? Try to connect to its listeners (fast fencing's proof).

A listening socket is the kernel's: it completes a connection whether or not its process gets the
CPU (a busy, slow or stopped broker still accepts), and it is gone the moment the process dies,
so a connection to it is refused. A network partition that drops packets answers nothing. Only a
refusal by every address of every listener counts as a dead process; anything else (accepted, no
answer in time, a name that does not resolve) does not.
"""

from __future__ import annotations

import asyncio
import enum
import socket
from collections.abc import Sequence

from strom.metadata import BrokerEndpoint

__all__ = ["ListenerProbe", "probe_listeners"]


class ListenerProbe(enum.Enum):
    REFUSED = "refused"
    """Every address of every listener refused a connection: no process listens there."""
    ACCEPTED = "accepted"
    """A listener accepted a connection: the process is alive."""
    UNKNOWN = "unknown"
    """No answer in time, or nothing to try: no proof either way."""


async def probe_listeners(endpoints: Sequence[BrokerEndpoint], timeout_s: float) -> ListenerProbe:
    """Connect to every address of ``endpoints`` at once (and close each connection at once)."""
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(timeout_s):
            addresses = [
                info
                for endpoint in endpoints
                for info in await loop.getaddrinfo(
                    endpoint.host, endpoint.port, type=socket.SOCK_STREAM
                )
            ]
            if not addresses:
                return ListenerProbe.UNKNOWN
            results = await asyncio.gather(*(_connect(*address) for address in addresses))
    except (TimeoutError, OSError):
        return ListenerProbe.UNKNOWN
    if ListenerProbe.ACCEPTED in results:
        return ListenerProbe.ACCEPTED
    if all(result is ListenerProbe.REFUSED for result in results):
        return ListenerProbe.REFUSED
    return ListenerProbe.UNKNOWN


async def _connect(
    family: int, kind: int, proto: int, _name: str, address: tuple[object, ...]
) -> ListenerProbe:
    sock = socket.socket(family, kind, proto)
    sock.setblocking(False)
    try:
        await asyncio.get_running_loop().sock_connect(sock, address)
    except ConnectionRefusedError:
        return ListenerProbe.REFUSED
    except OSError:
        return ListenerProbe.UNKNOWN
    finally:
        sock.close()
    return ListenerProbe.ACCEPTED
