"""A cursor over Kafka wire bytes: unsigned varints and slices, shared by the readers that skip
kio for speed (``produce_request``, ``fetch_answer``). They read fixed fields in place with
``struct.unpack_from(cursor.view, cursor.position)`` (a call less per field on their hot
paths), so the bytes failing them raise ``WireError`` or ``struct.error``: ``WIRE_ERRORS``.

Pure: no I/O.
"""

from __future__ import annotations

import struct

__all__ = ["WIRE_ERRORS", "WireCursor", "WireError"]


class WireError(Exception):
    """The bytes end early or hold a varint no Kafka field has; the message says which."""


WIRE_ERRORS = (WireError, struct.error)
"""What reading malformed bytes with a ``WireCursor`` and in-place ``struct`` reads raises."""


class WireCursor:
    """Reads ``view`` from ``position`` on, moving ``position`` past what it reads."""

    __slots__ = ("position", "view")

    def __init__(self, view: memoryview, position: int = 0) -> None:
        self.view = view
        self.position = position

    def uvarint(self) -> int:
        view = self.view
        value = shift = 0
        while True:
            try:
                byte = view[self.position]
            except IndexError:
                raise WireError("cut short") from None
            self.position += 1
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7
            if shift > 28:
                raise WireError("a varint longer than 5 bytes")

    def take(self, size: int) -> memoryview:
        """The next ``size`` bytes, as a view of the frame."""
        end = self.position + size
        if end > len(self.view):
            raise WireError("cut short")
        data = self.view[self.position : end]
        self.position = end
        return data
