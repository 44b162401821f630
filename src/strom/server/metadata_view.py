"""What request handlers need of the metadata: the current image (``MetadataLoader`` has it)."""

from __future__ import annotations

from typing import Protocol

from strom.metadata import MetadataImage

__all__ = ["MetadataView"]


class MetadataView(Protocol):
    @property
    def image(self) -> MetadataImage:
        """The newest committed image; immutable, so a handler may keep it while it works."""
        ...
