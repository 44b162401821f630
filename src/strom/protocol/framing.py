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
    "LARGE_FRAME",
    "LENGTH_PREFIX_SIZE",
    "BytesLike",
    "FrameDecoder",
    "InvalidFrameSizeError",
    "ProtocolError",
    "frame_prefix",
]

LENGTH_PREFIX_SIZE: Final = 4
LARGE_FRAME: Final = 64 * 1024
"""Frames from this size on are collected as chunks and joined once (``FrameDecoder``)."""
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

    Small frames are cut out of one buffer. The rest of a frame of ``LARGE_FRAME`` bytes or more
    (a produce request's batches) is kept as the chunks it arrives in and joined once, so each
    of its bytes is copied once here rather than into the buffer and then out of it.
    """

    def __init__(self, *, max_frame_size: int) -> None:
        if max_frame_size < 0:
            raise ValueError(f"max_frame_size must not be negative, got {max_frame_size}")
        self._max_frame_size = max_frame_size
        self._buffer = bytearray()
        self._parts: list[BytesLike] = []
        """The received part of a large frame's payload (its size prefix is consumed)."""
        self._missing = 0
        """Bytes the large frame in ``_parts`` still lacks; 0 when none is being collected."""
        self._collected = 0
        self._error: InvalidFrameSizeError | None = None

    @property
    def max_frame_size(self) -> int:
        return self._max_frame_size

    @max_frame_size.setter
    def max_frame_size(self, size: int) -> None:
        """Applies to the frames whose size prefix is read from now on (a SASL connection
        raises it once the client has authenticated)."""
        if size < 0:
            raise ValueError(f"max_frame_size must not be negative, got {size}")
        self._max_frame_size = size

    @property
    def buffered(self) -> int:
        """Bytes received that do not yet make a complete frame."""
        if self._missing:
            return LENGTH_PREFIX_SIZE + self._collected
        return len(self._buffer)

    @property
    def at_frame_boundary(self) -> bool:
        """True when no partial frame is buffered (an EOF now would truncate nothing)."""
        return not self._buffer and not self._missing

    def feed(self, data: BytesLike) -> list[bytes]:
        if self._error is not None:
            raise self._error
        if self._missing:
            return self._collect(data)
        return self._split(data)

    def _collect(self, data: BytesLike) -> list[bytes]:
        """Add ``data`` to the large frame being collected; the frames it completes."""
        missing = self._missing
        if len(data) < missing:
            # The caller may reuse a mutable buffer: keep only immutable chunks.
            self._parts.append(data if isinstance(data, bytes) else bytes(data))
            self._missing -= len(data)
            self._collected += len(data)
            return []
        with memoryview(data) as view:
            self._parts.append(view[:missing])
            frames = [b"".join(self._parts)]
            self._parts = []
            self._missing = self._collected = 0
            if len(view) > missing:
                frames += self._split(view[missing:])
        return frames

    def _split(self, data: BytesLike) -> list[bytes]:
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
            start = position + LENGTH_PREFIX_SIZE
            end = start + size
            if end > available:
                if size >= LARGE_FRAME:
                    with memoryview(buffer) as view:
                        self._parts = [bytes(view[start:])]
                    self._collected = available - start
                    self._missing = end - available
                    position = available
                break
            with memoryview(buffer) as view:  # one copy, straight into the frame's bytes
                frames.append(bytes(view[start:end]))
            position = end
        if position:
            del buffer[:position]
        return frames
