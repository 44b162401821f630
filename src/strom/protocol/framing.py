"""Length-prefixed frames, sans-I/O: feed bytes in, take complete frame payloads out.

Every Kafka request and response travels as a big-endian int32 size followed by that many bytes.
``FrameDecoder`` turns a byte stream into those payloads and refuses a size prefix that is negative
or larger than ``socket.request.max.bytes`` before buffering a byte of it, as Kafka's
``NetworkReceive`` does (``InvalidReceiveException``). It never touches a socket.
"""

from __future__ import annotations

import struct
import sys
import threading
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
"""Frames from this size on are received straight into a buffer of their size
(``FrameDecoder``)."""
_SCRATCH_SIZE: Final = LARGE_FRAME
"""What one receive outside a large frame takes: room for many small frames, and little of a
large frame's start (which is copied twice, through the buffer, before the rest goes straight
into the frame)."""
_POOL_SLOTS: Final = 4
"""Large-frame buffers kept for reuse, for all decoders of the process together."""
_POOLED_MAX: Final = 4 * 1024 * 1024
"""Larger buffers are not kept (a rare huge request does not stay in memory)."""
BytesLike: TypeAlias = bytes | bytearray | memoryview
_SIZE = struct.Struct(">i")


class _FramePool:
    """Buffers of large frames, taken again once nothing refers to the frame handed out.

    A fresh ``bytearray(size)`` is zero-filled and, for the sizes of produce requests, often
    fresh pages the kernel must fault in, before the socket's bytes overwrite it: as much work
    as a copy of the frame. A buffer comes back from the pool only when its reference count
    shows that no view of it is left (a memoryview holds a reference to the buffer it views),
    so a frame still in use is never overwritten.
    """

    def __init__(self) -> None:
        self._buffers: list[bytearray] = []
        self._lock = threading.Lock()

    def take(self, size: int) -> bytearray:
        """A buffer of at least ``size`` bytes that nothing else refers to."""
        with self._lock:
            buffers = self._buffers
            for index in range(len(buffers)):
                buffer = buffers[index]
                # references: the list, ``buffer`` and getrefcount's argument; a view adds one
                if len(buffer) >= size and sys.getrefcount(buffer) == 3:
                    del buffers[index]
                    return buffer
        return bytearray(size)

    def give(self, buffer: bytearray) -> None:
        """Keep ``buffer`` (whose frame was just handed out) for a later :meth:`take`."""
        if len(buffer) > _POOLED_MAX:
            return
        with self._lock:
            self._buffers.append(buffer)
            if len(self._buffers) > _POOL_SLOTS:
                del self._buffers[0]


_pool = _FramePool()


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

    Small frames are cut out of one buffer. A frame of ``LARGE_FRAME`` bytes or more (a produce
    request's batches) gets a ``bytearray`` of at least its size once its prefix is read (one
    whose earlier frame nothing refers to any more, or a new one), and is handed out as a
    read-only view of it.

    Bytes come in either way: ``feed`` takes a chunk the caller received (and copies it), or
    ``get_buffer`` and ``buffer_updated`` let the caller receive into the decoder's memory
    (``asyncio.BufferedProtocol``): the rest of a large frame straight into its ``bytearray``,
    so no chunk of it is allocated and copied again.
    """

    def __init__(self, *, max_frame_size: int) -> None:
        if max_frame_size < 0:
            raise ValueError(f"max_frame_size must not be negative, got {max_frame_size}")
        self._max_frame_size = max_frame_size
        self._buffer = bytearray()
        self._frame: bytearray | None = None
        """The buffer of the large frame being received (its size prefix is consumed), if any;
        from a pool, so possibly longer than the frame."""
        self._size = 0
        """The large frame's size."""
        self._filled = 0
        """Bytes of ``_frame`` received so far."""
        self._scratch = memoryview(bytearray(_SCRATCH_SIZE))
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
        if self._frame is not None:
            return LENGTH_PREFIX_SIZE + self._filled
        return len(self._buffer)

    @property
    def at_frame_boundary(self) -> bool:
        """True when no partial frame is buffered (an EOF now would truncate nothing)."""
        return not self._buffer and self._frame is None

    def feed(self, data: BytesLike) -> list[BytesLike]:
        """The frames completed by ``data`` (bytes, or read-only views of large frames)."""
        if self._error is not None:
            raise self._error
        if self._frame is None:
            return self._split(data)
        with memoryview(data) as view:
            taken = min(len(view), self._size - self._filled)
            self._frame[self._filled : self._filled + taken] = view[:taken]
            frames = self._fill(taken)
            if taken < len(view):
                frames += self._split(view[taken:])
        return frames

    def get_buffer(self) -> memoryview:
        """Where the next bytes received should go: the rest of the large frame being
        received, or else a scratch buffer. Then call :meth:`buffer_updated`."""
        if self._frame is not None:
            return memoryview(self._frame)[self._filled : self._size]
        return self._scratch

    def buffer_updated(self, size: int) -> list[BytesLike]:
        """The frames completed by the ``size`` bytes just received into :meth:`get_buffer`."""
        if self._error is not None:
            raise self._error
        if self._frame is not None:
            return self._fill(size)
        return self._split(self._scratch[:size])

    def _fill(self, size: int) -> list[BytesLike]:
        """``size`` more bytes of the large frame are in; the frame when it is complete."""
        assert self._frame is not None
        self._filled += size
        if self._filled < self._size:
            return []
        with memoryview(self._frame) as whole:
            frame = whole[: self._size].toreadonly()
        _pool.give(self._frame)
        self._frame = None
        self._filled = 0
        return [frame]

    def _split(self, data: BytesLike) -> list[BytesLike]:
        buffer = self._buffer
        buffer += data
        frames: list[BytesLike] = []
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
                    self._frame = _pool.take(size)
                    self._size = size
                    with memoryview(buffer) as view:
                        self._frame[: available - start] = view[start:]
                    self._filled = available - start
                    position = available
                break
            with memoryview(buffer) as view:  # one copy, straight into the frame's bytes
                frames.append(bytes(view[start:end]))
            position = end
        if position:
            del buffer[:position]
        return frames
