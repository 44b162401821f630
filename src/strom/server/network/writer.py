"""Writes response frames to one connection's transport: bytes parts, then file regions.

File regions go out with ``os.sendfile`` straight from the file to the socket when the transport
is a plain socket (not TLS) on a platform that has sendfile, and are otherwise read (``os.pread``)
and written in chunks. asyncio's own ``loop.sendfile`` is not used: uvloop does not implement it,
and the selector loop's version moves the file's position, which a segment file shared with the
log must not have changed under it.

Small regions are read (``os.pread``) into the frame's own write instead, up to
:data:`INLINE_MAX_BYTES` per frame: a follower's or a consumer's fetch of a few records then
leaves in one send, which wakes the reader once, where the frame's bytes and a sendfile after
them are two sends (and two wake-ups of the process reading them, on a busy machine each a
wait for a core).

Sending from the file needs two things the transport does not offer: its write buffer must be
empty first (so the region's bytes follow the frame's earlier bytes), and the writer must wait
for the socket to become writable when the kernel's buffer is full. Both are done on a duplicate
of the socket's descriptor: waiting on it is allowed (the loop refuses waiters on a descriptor
a transport owns), and sending on it stays safe even if the transport closes meanwhile and its
descriptor number is reused.
"""

from __future__ import annotations

import asyncio
import errno
import os
from typing import Final

from strom.protocol.framing import frame_prefix
from strom.server.api.response import Buffer, FileRegionLike, Response

__all__ = ["INLINE_MAX_BYTES", "FrameWriter"]

INLINE_MAX_BYTES: Final = 64 * 1024
"""File regions of a frame are copied into its write while they add up to at most this."""

_COPY_CHUNK: Final = 256 * 1024
_SENDFILE_CHUNK: Final = 8 * 1024 * 1024
_SENDFILE_UNSUPPORTED: Final = frozenset(
    {errno.EINVAL, errno.ENOSYS, errno.ENOTSOCK, errno.EOPNOTSUPP, errno.ESPIPE}
)


class _SendfileUnavailable(Exception):
    pass


class FrameWriter:
    """Frames to one transport, one at a time, honouring the transport's flow control.

    The owning protocol forwards ``pause_writing``, ``resume_writing`` and ``connection_lost``.
    A failed ``write`` leaves the stream in an unknown state: the caller must close it.
    """

    def __init__(self, transport: asyncio.Transport, *, use_sendfile: bool = True) -> None:
        self._transport = transport
        self._loop = asyncio.get_running_loop()
        self._paused = False
        self._lost = False
        self._drain_waiter: asyncio.Future[None] | None = None
        self._writable_waiter: asyncio.Future[None] | None = None
        self._use_sendfile = use_sendfile and _sendfile_possible(transport)
        self.sendfile_bytes = 0
        """Bytes sent from files with sendfile (the rest of a region's bytes were copied)."""

    @property
    def uses_sendfile(self) -> bool:
        return self._use_sendfile

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        _wake(self._drain_waiter)

    def connection_lost(self) -> None:
        self._lost = True
        for waiter in (self._drain_waiter, self._writable_waiter):
            if waiter is not None and not waiter.done():
                waiter.set_exception(ConnectionResetError("connection lost"))

    async def write(self, response: Response) -> None:
        """Write one frame: the size prefix, then every part in order (regions stay open)."""
        pending: list[Buffer] = [frame_prefix(response.size)]
        inline = INLINE_MAX_BYTES
        for part in response.parts:
            if isinstance(part, Buffer):
                pending.append(part)
            elif part.length <= inline:
                inline -= part.length
                pending.append(_read(part.fileno(), part.position, part.length))
            else:
                self._write_buffers(pending)
                pending = []
                await self._write_region(part)
        self._write_buffers(pending)
        await self.drain()

    async def drain(self) -> None:
        """Wait until the transport's buffer is below its high-water mark."""
        self._check_open()
        if not self._paused:
            return
        waiter = self._loop.create_future()
        self._drain_waiter = waiter
        try:
            await waiter
        finally:
            self._drain_waiter = None

    def _write_buffers(self, parts: list[Buffer]) -> None:
        self._check_open()
        if parts:
            self._transport.writelines(parts)

    def _check_open(self) -> None:
        if self._lost or self._transport.is_closing():
            raise ConnectionResetError("connection closed")

    async def _write_region(self, region: FileRegionLike) -> None:
        if region.length == 0:
            return
        if self._use_sendfile:
            try:
                await self._sendfile(region)
            except _SendfileUnavailable:
                self._use_sendfile = False
            else:
                return
        await self._copy(region)

    async def _sendfile(self, region: FileRegionLike) -> None:
        self._check_open()
        sock = self._transport.get_extra_info("socket")
        out_fd = os.dup(sock.fileno())
        try:
            while self._transport.get_write_buffer_size() > 0:
                await self._wait_writable(out_fd)
            in_fd = region.fileno()
            offset, remaining, sent_any = region.position, region.length, False
            while remaining:
                self._check_open()
                try:
                    sent = os.sendfile(out_fd, in_fd, offset, min(remaining, _SENDFILE_CHUNK))
                except BlockingIOError:
                    await self._wait_writable(out_fd)
                    continue
                except OSError as error:
                    if not sent_any and error.errno in _SENDFILE_UNSUPPORTED:
                        raise _SendfileUnavailable from error
                    raise
                if sent == 0:
                    raise EOFError(
                        f"file region {region.position}+{region.length} ends past the end of file"
                    )
                sent_any = True
                self.sendfile_bytes += sent
                offset += sent
                remaining -= sent
        finally:
            os.close(out_fd)

    async def _wait_writable(self, fd: int) -> None:
        waiter = self._loop.create_future()
        self._writable_waiter = waiter
        self._loop.add_writer(fd, _wake, waiter)
        try:
            await waiter
        finally:
            self._loop.remove_writer(fd)
            self._writable_waiter = None

    async def _copy(self, region: FileRegionLike) -> None:
        in_fd = region.fileno()
        offset, remaining = region.position, region.length
        while remaining:
            chunk = _read(in_fd, offset, min(remaining, _COPY_CHUNK))
            self._write_buffers([chunk])
            offset += len(chunk)
            remaining -= len(chunk)
            await self.drain()


def _read(fd: int, position: int, length: int) -> bytes:
    """``length`` bytes of the file from ``position``; EOFError when the file is shorter."""
    data = os.pread(fd, length, position)
    if len(data) < length:
        raise EOFError(f"file region {position}+{length} ends past the end of file")
    return data


def _wake(waiter: asyncio.Future[None] | None) -> None:
    if waiter is not None and not waiter.done():
        waiter.set_result(None)


def _sendfile_possible(transport: asyncio.Transport) -> bool:
    if not hasattr(os, "sendfile") or transport.get_extra_info("sslcontext") is not None:
        return False
    sock = transport.get_extra_info("socket")
    if sock is None:
        return False
    try:
        return int(sock.fileno()) >= 0
    except (OSError, ValueError):
        return False
