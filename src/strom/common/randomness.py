"""Randomness as an argument: cores take a RandomSource so tests can seed it."""

from __future__ import annotations

from typing import Protocol


class RandomSource(Protocol):
    """The randomness cores use; ``random.Random`` fits."""

    def randrange(self, stop: int, /) -> int: ...

    def getrandbits(self, k: int, /) -> int: ...
