"""Length-prefixed frames, sans-I/O: feed bytes in, take complete frame payloads out.

Every Kafka request and response travels as a big-endian int32 size followed by that many bytes.
``FrameDecoder`` turns a byte stream into those payloads and refuses a size prefix that is negative
or larger than ``socket.request.max.bytes`` before buffering a byte of it, as Kafka's
``NetworkReceive`` does (``InvalidReceiveException``). It never touches a socket.
"""

from __future__ import annotations

import struct
from typing import Final, TypeAlias

__all__ = [
    "LENGTH_PREFIX_SIZE",
    "BytesLike",
    "FrameDecoder",
    "InvalidFrameSizeError",
    "ProtocolError",
    "frame_prefix",
]

LENGTH_PREFIX_SIZE: Final = 4
BytesLike: TypeAlias = bytes | bytearray | memoryview
_SIZE = struct.Struct(">i")


class ProtocolError(Exception):
    """Input that breaks the wire protocol; the connection it came from cannot continue."""


class InvalidFrameSizeError(ProtocolError):
    """A frame's size prefix is negative or over the limit (``socket.request.max.bytes``)."""

    def __init__(self, *, size: int, max_size: int) -> None:
        if size < 0:
            reason = f"invalid frame size {size} (negative)"
        else:
            reason = f"frame size {size} is larger than socket.request.max.bytes={max_size}"
        super().__init__(reason)
        self.size = size
        self.max_size = max_size


def frame_prefix(size: int) -> bytes:
    """The 4-byte size prefix for a frame payload of ``size`` bytes."""
    return _SIZE.pack(size)


class FrameDecoder:
    """Splits a byte stream into frame payloads.

    ``feed`` returns every frame the new bytes complete, in order, possibly none. After it has
    raised ``InvalidFrameSizeError`` the stream cannot be resynchronised: every later ``feed``
    raises the same error.
    """

    def __init__(self, *, max_frame_size: int) -> None:
        if max_frame_size < 0:
            raise ValueError(f"max_frame_size must not be negative, got {max_frame_size}")
        self._max_frame_size = max_frame_size
        self._buffer = bytearray()
        self._error: InvalidFrameSizeError | None = None

    @property
    def buffered(self) -> int:
        """Bytes received that do not yet make a complete frame."""
        return len(self._buffer)

    @property
    def at_frame_boundary(self) -> bool:
        """True when no partial frame is buffered (an EOF now would truncate nothing)."""
        return not self._buffer

    def feed(self, data: BytesLike) -> list[bytes]:
        if self._error is not None:
            raise self._error
        buffer = self._buffer
        buffer += data
        frames: list[bytes] = []
        position = 0
        available = len(buffer)
        while available - position >= LENGTH_PREFIX_SIZE:
            (size,) = _SIZE.unpack_from(buffer, position)
            if size < 0 or size > self._max_frame_size:
                self._error = InvalidFrameSizeError(size=size, max_size=self._max_frame_size)
                del buffer[:]
                raise self._error
            end = position + LENGTH_PREFIX_SIZE + size
            if end > available:
                break
            with memoryview(buffer) as view:  # one copy, straight into the frame's bytes
                frames.append(bytes(view[position + LENGTH_PREFIX_SIZE : end]))
            position = end
        if position:
            del buffer[:position]
        return frames
