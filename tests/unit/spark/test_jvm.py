"""strom's JVM classes: compiled with javac into a jar in the user's cache the first time, the
same jar found the next time; a machine without javac gets an error saying what to install."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest

from strom.spark import jvm


@pytest.mark.skipif(shutil.which("javac") is None, reason="needs a JDK's javac")
def test_the_jar_is_built_once_into_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    built = jvm.jar()
    assert built.parent == tmp_path / "strom" / "jvm"
    names = zipfile.ZipFile(built).namelist()
    assert "strom/spark/ConfluentAvro.class" in names
    assert "strom/spark/ConfluentAvro$Decode.class" in names
    modified = built.stat().st_mtime_ns
    assert jvm.jar() == built
    assert built.stat().st_mtime_ns == modified
    assert [p.name for p in built.parent.iterdir()] == [built.name]  # no work files left


def test_without_javac_the_error_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(shutil, "which", lambda _: None)
    with pytest.raises(jvm.JvmBuildError, match="install a JDK"):
        jvm.jar()
