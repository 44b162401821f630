"""Java ``.properties`` files: ``server.properties``, ``meta.properties``, the clients' command
configs."""

from __future__ import annotations

from pathlib import Path

from strom.config.setting import ConfigError

__all__ = ["load_properties", "parse_properties"]


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text: ``key=value`` or ``key: value`` lines, ``#`` comments."""
    result: dict[str, str] = {}
    for number, raw_line in enumerate(text.splitlines(), start=1):
        line = raw_line.strip()
        if not line or line[0] in "#!":
            continue
        separators = [i for i in (line.find("="), line.find(":")) if i > 0]
        if not separators:
            raise ConfigError(f"line {number}", f"expected name=value, got {line!r}")
        cut = min(separators)
        result[line[:cut].strip()] = line[cut + 1 :].strip()
    return result


def load_properties(path: Path) -> dict[str, str]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(str(path), f"cannot read properties file: {error.strerror}") from None
    return parse_properties(text)
